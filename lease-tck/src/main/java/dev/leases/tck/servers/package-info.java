/**
 * Real servers for tests: an endpoint from the environment, else a local binary on a free loopback
 * port, else a container when Testcontainers finds an engine, else a failure that says how to
 * install the server ({@link dev.leases.tck.servers.TestServers}); and a TCP proxy that stalls or
 * cuts one client's connection ({@link dev.leases.tck.servers.TcpProxy}).
 */
@NullMarked
package dev.leases.tck.servers;

import org.jspecify.annotations.NullMarked;
