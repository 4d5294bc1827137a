/**
 * An in-process store served over loopback TCP ({@link dev.leases.tck.remote.LeaseStoreServer},
 * {@link dev.leases.tck.remote.RemoteLeaseStore}), so that scenarios needing other JVMs or a network
 * path also run against stores that live in one JVM.
 */
@NullMarked
package dev.leases.tck.remote;

import org.jspecify.annotations.NullMarked;
