package dev.leases.benchmarks;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/** Counts the calls made to a store (each is one round trip for the PostgreSQL and Redis stores). */
final class CountingStore extends ForwardingLeaseStore {

  private final AtomicLong calls = new AtomicLong();

  CountingStore(LeaseStore delegate) {
    super(delegate);
  }

  long calls() {
    return calls.get();
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
    return super.inspect(name);
  }
}
