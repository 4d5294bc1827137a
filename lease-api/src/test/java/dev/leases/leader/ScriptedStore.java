package dev.leases.leader;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.time.ManualClock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The reference store on a manual clock, with scripted answers for acquireOrRenew: a queued
 * script runs instead of the real call (to fail, to answer a different token, to take time).
 */
final class ScriptedStore extends ForwardingLeaseStore {

  final ManualClock clock;
  final InMemoryLeaseStore real;
  private final Deque<Supplier<Optional<LeaseGrant>>> script = new ArrayDeque<>();
  int acquireCalls;
  int releaseCalls;

  ScriptedStore(ManualClock clock) {
    this(clock, new InMemoryLeaseStore(clock));
  }

  private ScriptedStore(ManualClock clock, InMemoryLeaseStore real) {
    super(real);
    this.clock = clock;
    this.real = real;
  }

  ScriptedStore failNext() {
    script.add(() -> {
      throw new LeaseStoreUnavailableException("scripted failure", null);
    });
    return this;
  }

  ScriptedStore next(Supplier<Optional<LeaseGrant>> answer) {
    script.add(answer);
    return this;
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    acquireCalls++;
    Supplier<Optional<LeaseGrant>> s = script.poll();
    return s != null ? s.get() : super.acquireOrRenew(name, holder, ttl);
  }

  @Override
  public boolean release(String name, HolderId holder) {
    releaseCalls++;
    return super.release(name, holder);
  }

  @Override
  public TtlRange ttlRange() {
    return new TtlRange(Duration.ofMillis(100), Duration.ofHours(1), Duration.ofMillis(1));
  }
}
