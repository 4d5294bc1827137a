package dev.leases.benchmarks;

import java.util.List;
import java.util.Random;

/**
 * The nemesis's seeded random schedule: the same seed, fault types and TTL give the same sequence
 * of {@link Step}s. Which worker a step lands on is decided at run time from the step's
 * {@code onLeader} and {@code pick} (the leader, or the {@code pick}-th eligible worker modulo their
 * number), so the schedule itself does not depend on timing.
 */
final class NemesisSchedule {

  /** The faults the nemesis can inject; {@link #label} is what the report prints. */
  enum FaultType {
    PAUSE_SHORT("pause-short"),
    PAUSE_LONG("pause-long"),
    KILL("kill"),
    RESTART("restart"),
    SNAPSHOT("snapshot"),
    CLOCK_STEP("clock-step"),
    NET_STALL("net-stall"),
    NET_CUT("net-cut"),
    /** One of the backend's store faults ({@link StoreFaults}); the report names which. */
    STORE("store");

    final String label;

    FaultType(String label) {
      this.label = label;
    }

    /** Whether it hurts one worker (the rest hurt the store). */
    boolean onWorker() {
      return this != STORE;
    }
  }

  /**
   * One fault to inject.
   *
   * @param durationMs how long it lasts (pause, stall, cut, store downtime, respawn delay)
   * @param gapMs quiet time (of this lane) after the fault has ended and the resource accepted a
   *     write again
   * @param clockStepMs for a clock step (also one that a snapshot becomes on a worker whose
   *     monotonic clock is not faked): how far the worker's wall clock moves
   * @param snapshotMs for a snapshot (also one that a clock step becomes on a worker whose clocks
   *     are both faked): how long it stays frozen
   */
  record Step(int index, FaultType type, boolean onLeader, int pick, long durationMs, long gapMs,
      long clockStepMs, long snapshotMs) {}

  private static final long SECOND = 1000;
  private static final long TWO_WEEKS = 14L * 24 * 3600 * SECOND;

  private final Random random;
  private final List<FaultType> types;
  private final long ttlMs;
  private int index;

  /**
   * The schedule of fault lane {@code lane} (0 is the seed's own sequence): lanes run at the same
   * time, each with its own sequence derived from the seed.
   */
  static NemesisSchedule lane(long seed, int lane, List<FaultType> types, long ttlMs) {
    return new NemesisSchedule(seed + lane * 0x9E3779B97F4A7C15L, types, ttlMs);
  }

  NemesisSchedule(long seed, List<FaultType> types, long ttlMs) {
    if (types.isEmpty()) {
      throw new IllegalArgumentException("a schedule needs at least one fault type");
    }
    this.random = new Random(seed);
    this.types = List.copyOf(types);
    this.ttlMs = ttlMs;
  }

  Step next() {
    FaultType type = types.get(random.nextInt(types.size()));
    boolean onLeader = random.nextDouble() < 0.9;
    int pick = random.nextInt(1 << 16);
    long duration = switch (type) {
      case PAUSE_SHORT -> ttl(0.2, 0.7);
      case PAUSE_LONG, SNAPSHOT -> ttl(1.5, 3.0);
      case NET_STALL, NET_CUT -> ttl(0.5, 3.0);
      case KILL, RESTART -> ttl(0.0, 0.5);
      case STORE -> ttl(0.2, 1.5);
      case CLOCK_STEP -> 0;
    };
    // log-uniform between a second and two weeks, either way
    long step = Math.round(Math.exp(Math.log(SECOND) + random.nextDouble()
        * (Math.log(TWO_WEEKS) - Math.log(SECOND))));
    if (random.nextBoolean()) {
      step = -step;
    }
    long gap = ttl(0.0, 0.3);
    long snapshot = ttl(1.5, 3.0);
    return new Step(++index, type, onLeader, pick, duration, gap, step, snapshot);
  }

  private long ttl(double from, double to) {
    return Math.round(ttlMs * (from + random.nextDouble() * (to - from)));
  }
}
