package dev.leases.tck;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the calls made to a store: round trips for the benchmark, and a condition to wait on in
 * tests ("the follower has read the lease's expiry" is {@code inspects() > 0}: a leader loop that
 * missed an acquire inspects the lease, then sleeps until the expiry it read or a release hint).
 */
public final class CountingLeaseStore extends ForwardingLeaseStore {

  private final AtomicLong calls = new AtomicLong();
  private final AtomicLong inspects = new AtomicLong();

  public CountingLeaseStore(LeaseStore delegate) {
    super(delegate);
  }

  /** Every acquire-or-renew, release, token and inspect call so far. */
  public long calls() {
    return calls.get();
  }

  /** The inspect calls so far. */
  public long inspects() {
    return inspects.get();
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
  public OptionalLong token(String name) {
    calls.incrementAndGet();
    return super.token(name);
  }

  @Override
  public LeaseState inspect(String name) {
    calls.incrementAndGet();
    inspects.incrementAndGet();
    return super.inspect(name);
  }
}
