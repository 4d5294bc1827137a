package dev.leases.leader;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Compares wall-clock and monotonic elapsed time from the start of one round of a loop or group to
 * the start of the next. A suspended VM's monotonic clock does not count the suspension and a
 * stepped wall clock does not count real time, so a disagreement above the tolerance means a pause,
 * a restore or a clock step. Start to start, so that a pause <em>during</em> a round (while a store
 * call is on its way) is seen by the next round too. Used by one thread at a time (the round's).
 */
final class ClockJumps {

  private final long toleranceMillis;
  private boolean marked;
  private long lastMono;
  private long lastWall;

  ClockJumps(Duration tolerance) {
    this.toleranceMillis = tolerance.toMillis();
  }

  /**
   * Called with the readings at the start of a round: what moved since the previous call if the
   * clocks disagree by more than the tolerance (for the log: "wall clock moved .. ms while monotonic
   * time moved .. ms"), else null (also on the first call). The next call compares with these
   * readings.
   */
  @Nullable String check(long monoNanos, long wallMillis) {
    String jump = null;
    if (marked) {
      long monoMs = (monoNanos - lastMono) / 1_000_000L;
      long wallMs = wallMillis - lastWall;
      if (Math.abs(wallMs - monoMs) > toleranceMillis) {
        jump = "wall clock moved " + wallMs + " ms while monotonic time moved " + monoMs + " ms";
      }
    }
    marked = true;
    lastMono = monoNanos;
    lastWall = wallMillis;
    return jump;
  }
}
