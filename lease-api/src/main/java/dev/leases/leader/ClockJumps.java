package dev.leases.leader;

import dev.leases.time.LeaseClock;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Compares wall-clock and monotonic elapsed time between two rounds of a loop or group. A suspended
 * VM's monotonic clock does not count the suspension and a stepped wall clock does not count real
 * time, so a disagreement above the tolerance means a pause, a restore or a clock step. Used by one
 * thread at a time (the round's).
 */
final class ClockJumps {

  private final LeaseClock clock;
  private final long toleranceMillis;
  private boolean marked;
  private long lastMono;
  private long lastWall;

  ClockJumps(LeaseClock clock, Duration tolerance) {
    this.clock = clock;
    this.toleranceMillis = tolerance.toMillis();
  }

  /**
   * What moved since the last {@link #mark()} if the clocks disagree by more than the tolerance
   * (for the log: "wall clock moved .. ms while monotonic time moved .. ms"), else null.
   */
  @Nullable String check(long monoNanos, long wallMillis) {
    if (!marked) {
      return null;
    }
    long monoMs = (monoNanos - lastMono) / 1_000_000L;
    long wallMs = wallMillis - lastWall;
    if (Math.abs(wallMs - monoMs) <= toleranceMillis) {
      return null;
    }
    return "wall clock moved " + wallMs + " ms while monotonic time moved " + monoMs + " ms";
  }

  /** Records the end of a round: the next {@link #check} compares with now. */
  void mark() {
    marked = true;
    lastMono = clock.monotonicNanos();
    lastWall = clock.wallMillis();
  }
}
