/**
 * Leases with fencing tokens on Redis (Lettuce 7).
 *
 * <p>{@link dev.leases.redis.RedisLeaseStore} implements {@link dev.leases.LeaseStore} with one Lua
 * script per operation on a single primary; {@link dev.leases.redis.RedisLeaseStoreFactory} opens
 * one from string settings; {@link dev.leases.redis.RedisFence} makes writes to Redis resources
 * check the token ({@code >=} the highest accepted, else
 * {@link dev.leases.FencedOutException}); {@link dev.leases.redis.RedisRunLedger} keeps the run
 * records of {@link dev.leases.once.ExactlyOnce} beside the leases (a key-value ledger: one script
 * per operation, under the hash tag of the job's lease; {@link dev.leases.redis.RedisRunLedgerFactory}
 * opens one from the store's settings).
 *
 * <p>Security: {@link dev.leases.redis.RedisAcl} gives the ACL rules of a least-privilege holder
 * and of a read-only observer; a refusal by Redis (ACL, credentials) throws
 * {@link dev.leases.redis.RedisAccessDeniedException}. Credentials and TLS ({@code rediss://},
 * PEM files) are builder and factory settings; passwords never appear in logs or messages.
 *
 * <p>Per lease name {@code n} and prefix {@code p}, all under the hash tag {@code {p:E(n)}} where
 * {@code E} percent-encodes the name's UTF-8 bytes outside {@code A-Z a-z 0-9 - . _ ~ /}:
 * {@code :lease} (hash holder/token, native expiry), {@code :fence} (token counter, never expires),
 * {@code :last} (latest tenure: holder/token/expiry, for telling EXPIRED from FREE). Releases are
 * announced on the channel {@code p:released} with the name as message.
 *
 * <p>Token scheme: a new grant takes {@code max(INCR counter, server TIME in ms, last token + 1)},
 * so tokens grow across release, expiry, an out-of-band delete of the lease, and a restart of a
 * server that lost its data.
 */
@NullMarked
package dev.leases.redis;

import org.jspecify.annotations.NullMarked;
