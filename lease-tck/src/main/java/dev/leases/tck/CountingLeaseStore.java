package dev.leases.tck;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the calls made to a store: round trips for the benchmark, and a condition to wait on in
 * tests ("the follower has read the lease's expiry" is {@code expiryReads() > 0}: a leader loop that
 * missed an acquire learns the lease's expiry, from the refusal if the store's batch answer says it
 * or else by inspecting, then sleeps until that expiry or a release hint). Batch calls go to the
 * delegate's own batch (native or default) and count as one call each.
 */
public final class CountingLeaseStore extends ForwardingLeaseStore {

  private final AtomicLong calls = new AtomicLong();
  private final AtomicLong inspects = new AtomicLong();
  private final AtomicLong expiryReads = new AtomicLong();

  /** Counts the calls made through it to {@code delegate}. */
  public CountingLeaseStore(LeaseStore delegate) {
    super(delegate);
  }

  /** Every acquire-or-renew, release, token and inspect call so far; a batch counts once. */
  public long calls() {
    return calls.get();
  }

  /** The inspect calls so far. */
  public long inspects() {
    return inspects.get();
  }

  /** Inspect calls plus refusals that said until when the lease is held. */
  public long expiryReads() {
    return expiryReads.get();
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    calls.incrementAndGet();
    return super.acquireOrRenew(name, holder, ttl);
  }

  @Override
  public boolean release(String name, HolderId holder) {
    calls.incrementAndGet();
    return super.release(name, holder);
  }

  @Override
  public Map<String, AcquireResult> acquireOrRenewAll(
      Collection<String> names, HolderId holder, Duration ttl) {
    calls.incrementAndGet();
    Map<String, AcquireResult> answers = delegate().acquireOrRenewAll(names, holder, ttl);
    for (AcquireResult a : answers.values()) {
      if (a instanceof AcquireResult.Refused r && r.heldBy().isPresent()) {
        expiryReads.incrementAndGet();
      }
    }
    return answers;
  }

  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    calls.incrementAndGet();
    return delegate().releaseAll(names, holder);
  }

  @Override
  public OptionalLong token(String name) {
    calls.incrementAndGet();
    return super.token(name);
  }

  @Override
  public LeaseState inspect(String name) {
    calls.incrementAndGet();
    inspects.incrementAndGet();
    expiryReads.incrementAndGet();
    return super.inspect(name);
  }
}
