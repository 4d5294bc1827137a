package dev.leases.leader;

import dev.leases.AcquireResult;
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
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The reference store on a manual clock, with scripted answers for acquireOrRenew: a queued
 * script runs instead of the real call (to fail, to answer a different token, to take time). Batch
 * calls go through the SPI's defaults (so per-name scripts apply to them), are counted, and can be
 * scripted as a whole ({@link #beforeNextBatch}).
 */
final class ScriptedStore extends ForwardingLeaseStore {

  final ManualClock clock;
  final InMemoryLeaseStore real;
  private final Deque<Supplier<Optional<LeaseGrant>>> script = new ArrayDeque<>();
  private final Deque<Runnable> batchScript = new ArrayDeque<>();
  private final Deque<Runnable> releaseBatchScript = new ArrayDeque<>();
  int acquireCalls;
  int releaseCalls;
  int acquireBatches;
  int releaseBatches;
  final List<Integer> batchSizes = new ArrayList<>();

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

  /** Runs {@code before} when the next acquire batch arrives, before it is answered. */
  ScriptedStore beforeNextBatch(Runnable before) {
    batchScript.add(before);
    return this;
  }

  /** Runs {@code before} when the next release batch arrives, before it is answered. */
  ScriptedStore beforeNextReleaseBatch(Runnable before) {
    releaseBatchScript.add(before);
    return this;
  }

  ScriptedStore failNextBatch() {
    return beforeNextBatch(() -> {
      throw new LeaseStoreUnavailableException("scripted batch failure", null);
    });
  }

  @Override
  public Map<String, AcquireResult> acquireOrRenewAll(
      Collection<String> names, HolderId holder, Duration ttl) {
    acquireBatches++;
    batchSizes.add(names.size());
    Runnable before = batchScript.poll();
    if (before != null) {
      before.run();
    }
    return super.acquireOrRenewAll(names, holder, ttl);
  }

  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    releaseBatches++;
    Runnable before = releaseBatchScript.poll();
    if (before != null) {
      before.run();
    }
    return super.releaseAll(names, holder);
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
