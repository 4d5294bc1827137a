package dev.leases.leader;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The settings a {@link LeaderLoop.Builder} and a {@link LeaseGroup.Builder} share, each setter
 * written once; {@link #timings()} validates them with {@link Timings}.
 *
 * @param <B> the concrete builder, returned by every setter
 */
abstract class LoopBuilder<B extends LoopBuilder<B>> {

  final LeaseStore store;
  Duration ttl;
  Duration renewInterval;
  Duration standDownMargin;
  Duration clockJumpTolerance;
  Duration callTimeout;
  LeaseClock clock = LeaseClock.system();
  HolderId holder;
  final List<LeaderListener> listeners = new ArrayList<>();
  StoreCalls calls;
  ScheduledExecutorService scheduler;
  Executor listenerExecutor;

  LoopBuilder(LeaseStore store) {
    this.store = Objects.requireNonNull(store, "store must not be null");
  }

  abstract B self();

  /** The lease TTL (required); must be within the store's {@link LeaseStore#ttlRange()}. */
  public B ttl(Duration ttl) {
    this.ttl = ttl;
    return self();
  }

  /** How often the holder renews; default {@code ttl/3}; at most {@code ttl/3}. */
  public B renewInterval(Duration renewInterval) {
    this.renewInterval = renewInterval;
    return self();
  }

  /** How long before the promised expiry the holder stands down; default {@code ttl/10}. */
  public B standDownMargin(Duration margin) {
    this.standDownMargin = margin;
    return self();
  }

  /**
   * How far wall and monotonic elapsed time may disagree between two rounds before it counts as a
   * pause or clock jump; default {@code standDownMargin}.
   */
  public B clockJumpTolerance(Duration tolerance) {
    this.clockJumpTolerance = tolerance;
    return self();
  }

  /** Longest wait for one store call; default {@code renewInterval}. */
  public B callTimeout(Duration timeout) {
    this.callTimeout = timeout;
    return self();
  }

  /** The clocks to measure elapsed time with; default the system's. */
  public B clock(LeaseClock clock) {
    this.clock = Objects.requireNonNull(clock, "clock must not be null");
    return self();
  }

  /** The holder id to start with; default {@link HolderId#generate()}. Never persist one. */
  public B holder(HolderId holder) {
    this.holder = Objects.requireNonNull(holder, "holder must not be null");
    return self();
  }

  /**
   * Adds a listener. Callbacks run on the {@linkplain #listenerExecutor listener executor}, never
   * on the renewal path: one at a time per loop or group, in the order the events happened.
   */
  public B listener(LeaderListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
    return self();
  }

  /**
   * Where the rounds run; default a scheduler shared by every loop and group of the process (2 to
   * 4 daemon threads). A round blocks its thread for at most the call timeout per store call.
   * Shutting the scheduler down stops the rounds (tokens drop to 0 at their local deadlines).
   */
  public B scheduler(ScheduledExecutorService scheduler) {
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
    return self();
  }

  /**
   * Where listener callbacks run; default a pool shared by every loop and group of the process.
   * It is handed one task at a time per loop or group, so their callbacks never overlap. It must
   * run them on threads of its own: one that runs a task on the thread that hands it over
   * ({@code Runnable::run}, a {@code CallerRunsPolicy}) puts user code on the renewal path, where
   * the loop or group hands events over while it holds its lock.
   */
  public B listenerExecutor(Executor executor) {
    this.listenerExecutor = Objects.requireNonNull(executor, "listener executor must not be null");
    return self();
  }

  B storeCalls(StoreCalls calls) {
    this.calls = calls;
    return self();
  }

  /** The validated timings, with defaults filled in. */
  Timings timings() {
    return Timings.validate(store, ttl, renewInterval, standDownMargin, clockJumpTolerance,
        callTimeout);
  }
}
