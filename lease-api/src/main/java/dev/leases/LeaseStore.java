package dev.leases;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The SPI every backend implements: named leases that expire by the <em>store's</em> clock and carry
 * a fencing token.
 *
 * <p>Contract, proven by the compatibility kit ({@code lease-tck}) for every implementation:
 * <ol>
 *   <li>Expiry is judged by the store's clock, never by the caller's.
 *   <li>The token of a grant is equal to the previous one when the same holder renews within an
 *       unexpired tenure, and strictly larger on every other grant of the name: another holder,
 *       re-acquire after release, re-acquire after the holder's own expiry.
 *   <li>Tokens for a name never go backwards, not across release, nor an out-of-band delete of the
 *       stored lease, nor a restart of the store.
 *   <li>Every call is bounded in time; one that fails or times out throws
 *       {@link LeaseStoreUnavailableException}, and its outcome is unknown.
 *   <li>Names, holders and TTLs are validated before anything is sent ({@link LeaseArguments},
 *       {@link TtlRange#check(Duration)}).
 * </ol>
 *
 * <p>Implementations are thread-safe. Calls after {@link #close()} throw
 * {@link LeaseStoreClosedException}.
 */
public interface LeaseStore extends AutoCloseable {

  /**
   * Acquires the lease for {@code holder}, or renews it if {@code holder} already has it.
   *
   * @return the grant, or empty when another holder has an unexpired lease (a normal outcome: do not
   *     retry it in a tight loop)
   * @throws IllegalArgumentException for a bad name or a TTL outside {@link #ttlRange()}
   * @throws LeaseStoreUnavailableException when the outcome is unknown
   */
  Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl);

  /**
   * Gives the lease up if {@code holder} has it, keeping the token so that the next grant is larger.
   * Followers that {@linkplain #onRelease subscribed} are woken.
   *
   * @return true if {@code holder} held an unexpired lease and it is now free
   */
  boolean release(String name, HolderId holder);

  /**
   * A token {@code t} for {@code name} that fences everything issued so far: every token the store
   * has issued for the name is {@code <= t}, and every grant of a new tenure after this call gets a
   * token {@code > t}.
   *
   * <p>While the store keeps its record of the name, {@code t} is exactly the latest grant's token.
   * When that record is gone (deleted out of band) or was never written, a store may answer a
   * store-wide bound instead (a sequence value, a Raft index), so an operator's delete can never make
   * the answer go back. Empty only when the store knows of no token for the name and keeps no such
   * bound; treat empty as 0.
   */
  OptionalLong token(String name);

  /** Reads the lease's state from the store, never from a cache. */
  LeaseState inspect(String name);

  /** The TTLs this store accepts. */
  TtlRange ttlRange();

  /**
   * Registers a hint that {@code name} may have become free (released or deleted). Hints can be lost
   * (a dropped connection); callers must still poll until the expiry they last read. The listener
   * runs on a store thread and must return quickly. The default delivers no hints.
   *
   * @return a handle that unregisters the listener
   */
  default Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    return () -> {};
  }

  /** Releases the store's resources. Leases it granted are not released: they expire. */
  @Override
  void close();

  /** Unregisters a listener; idempotent. */
  @FunctionalInterface
  interface Subscription extends AutoCloseable {
    @Override
    void close();
  }
}
