/**
 * The operator CLI ({@code java -jar lease-cli.jar}): inspect, list, watch, token and a forced
 * release of leases on any backend, a lease's history on etcd (the one backend that keeps one),
 * human output or {@code --json}, documented exit codes ({@link dev.leases.cli.ExitCodes}).
 */
@NullMarked
package dev.leases.cli;

import org.jspecify.annotations.NullMarked;
