/**
 * Leases with fencing tokens on Consul sessions and KV locks (kiwiproject {@code consul-client}).
 *
 * <p>{@link dev.leases.consul.ConsulLeaseStore} implements {@link dev.leases.LeaseStore}: one
 * session per holder tenure ({@code LockDelay 0s}, {@code Behavior release}), one KV key per lease
 * under a prefix, locked and unlocked only inside guarded transactions. The fencing token is the
 * Raft index at which the tenure created the key ({@code CreateIndex}), so it grows across release,
 * expiry, out-of-band deletes and restarts of servers that keep their data.
 * {@link dev.leases.consul.ConsulLeaseStoreFactory} opens a store from string settings;
 * {@link dev.leases.consul.ConsulFence} makes writes to Consul KV resources check the token
 * ({@code >=} the highest accepted, kept in the key's {@code Flags}, else
 * {@link dev.leases.FencedOutException}).
 *
 * <p>Security: {@link dev.leases.consul.ConsulPolicies} gives the ACL rules of a holder and of a
 * read-only observer for one key prefix, and creates policies and tokens through an
 * administrator's client; every ACL refusal throws
 * {@link dev.leases.consul.ConsulAccessDeniedException}. Stores built from a URL take the token
 * from a file ({@code aclTokenFile}, re-read when it changes) or the environment, and speak HTTPS
 * with a PEM trust certificate and an optional client certificate.
 *
 * <p>Failover bound: Consul may keep a dead holder's session for up to {@code 2 x TTL} after its
 * last renewal. Minimum TTL: the server's {@code session_ttl_min}, 10 s unless configured.
 */
@NullMarked
package dev.leases.consul;

import org.jspecify.annotations.NullMarked;
