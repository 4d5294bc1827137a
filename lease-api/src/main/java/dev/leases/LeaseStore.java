package dev.leases;

import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * <p><b>Batches.</b> {@link #acquireOrRenewAll} and {@link #releaseAll} act on up to
 * {@value #MAX_BATCH_SIZE} names in one call. Their defaults make one single call per name, so every
 * store has them; a store overrides them to answer a batch in one round trip. Either way:
 * <ul>
 *   <li>Every name, the holder and the TTL are validated before anything is sent
 *       ({@link LeaseArguments#requireNames}): a malformed name, a repeated name or a batch above
 *       {@value #MAX_BATCH_SIZE} names throws {@link IllegalArgumentException} and changes nothing.
 *   <li>Each name gets exactly the outcome the single call would give it at some moment during the
 *       batch: the same token rules, expiry by the store's clock. Names are judged independently and
 *       not necessarily at the same instant; a batch is not a transaction across names, and partial
 *       grants (some names granted, others refused) are a normal answer.
 *   <li>A batch that throws (times out, loses its connection) has an unknown outcome for
 *       <em>every</em> name in it: some may have been granted, renewed or released. Unknown is no.
 *   <li><b>Shared fate.</b> A store may tie several names to one server-side lease or session (an
 *       etcd lease, a Consul session): losing it loses every name on it at once, and a grant's
 *       expiry may then come earlier than its TTL says for all of them together. Callers must treat
 *       each name's deadline independently, from the send time of the call that last granted that
 *       name, and must not assume that one name still held means the others are.
 * </ul>
 *
 * <p>Implementations are thread-safe. Calls after {@link #close()} throw
 * {@link LeaseStoreClosedException}.
 */
public interface LeaseStore extends AutoCloseable {

  /** The most names {@link #acquireOrRenewAll} and {@link #releaseAll} accept in one call. */
  int MAX_BATCH_SIZE = 10_000;

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

  /**
   * Acquires or renews every name in {@code names} for {@code holder}, each exactly as
   * {@link #acquireOrRenew} would (see "Batches" in the class comment for the contract and its
   * races). The default calls {@link #acquireOrRenew} once per name, in order, and its refusals do
   * not say who holds the name ({@link AcquireResult.Refused#heldBy()} empty); a store that reads the
   * holder in the same round trip should say.
   *
   * @return one result per name, in the order of {@code names}; unmodifiable
   * @throws IllegalArgumentException for a bad, repeated or excess name or a TTL outside
   *     {@link #ttlRange()}; nothing was sent
   * @throws LeaseStoreUnavailableException when the outcome of the whole batch is unknown
   */
  default Map<String, AcquireResult> acquireOrRenewAll(
      Collection<String> names, HolderId holder, Duration ttl) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    ttlRange().check(ttl);
    Map<String, AcquireResult> results = new LinkedHashMap<>();
    for (String name : checked) {
      Optional<LeaseGrant> grant = acquireOrRenew(name, holder, ttl);
      results.put(name, grant.<AcquireResult>map(AcquireResult.Granted::new)
          .orElseGet(() -> AcquireResult.Refused.unexplained(name)));
    }
    return Collections.unmodifiableMap(results);
  }

  /**
   * Releases every name in {@code names} that {@code holder} holds unexpired, each exactly as
   * {@link #release} would, waking subscribers of each released name. The default calls
   * {@link #release} once per name, in order.
   *
   * @return for each name, in the order of {@code names}, whether it was released; unmodifiable
   * @throws IllegalArgumentException for a bad, repeated or excess name; nothing was sent
   * @throws LeaseStoreUnavailableException when the outcome of the whole batch is unknown
   */
  default Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    Map<String, Boolean> results = new LinkedHashMap<>();
    for (String name : checked) {
      results.put(name, release(name, holder));
    }
    return Collections.unmodifiableMap(results);
  }

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
