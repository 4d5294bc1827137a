/**
 * Leases with fencing tokens on etcd v3, through jetcd.
 *
 * <ul>
 *   <li>{@link dev.leases.etcd.EtcdLeaseStore}: the {@link dev.leases.LeaseStore}; each tenure is an
 *       etcd lease, the token is the lease key's {@code create_revision}.
 *   <li>{@link dev.leases.etcd.EtcdLeaseStoreFactory}: opens one from string settings.
 *   <li>{@link dev.leases.etcd.EtcdFence}: fenced writes to keys kept in etcd.
 *   <li>{@link dev.leases.etcd.EtcdLeaseHistory}: a lease's past changes, as
 *       {@link dev.leases.etcd.EtcdLeaseStore#history} reads them from etcd's revisions.
 * </ul>
 *
 * <p>Renewal loops are not written here: use {@link dev.leases.leader.LeaderLoop} over the store.
 */
@NullMarked
package dev.leases.etcd;

import org.jspecify.annotations.NullMarked;
