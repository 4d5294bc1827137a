package dev.leases.time;

import java.time.Instant;

/**
 * The two clocks a lease holder needs, kept apart on purpose.
 *
 * <p>Wall time can jump (NTP steps, a snapshot restored weeks later and then corrected). Monotonic
 * time never jumps but, in a suspended virtual machine, does not count the suspension. A holder that
 * trusts either one alone can believe it still leads after a pause; comparing the two reveals
 * pauses and jumps. Inject this instead of calling the system clocks, so tests can pause time.
 */
public interface LeaseClock {

  /** Wall-clock time in milliseconds since the epoch ({@code System.currentTimeMillis()}). */
  long wallMillis();

  /** Monotonic time in nanoseconds from an arbitrary origin ({@code System.nanoTime()}). */
  long monotonicNanos();

  /** {@link #wallMillis()} as an instant. */
  default Instant wallInstant() {
    return Instant.ofEpochMilli(wallMillis());
  }

  /** The system's clocks. */
  static LeaseClock system() {
    return SystemClock.INSTANCE;
  }

  /** The system's clocks with a constant offset on wall time (for skew tests). */
  static LeaseClock skewed(LeaseClock base, java.time.Duration wallOffset) {
    long offset = wallOffset.toMillis();
    return new LeaseClock() {
      @Override
      public long wallMillis() {
        return base.wallMillis() + offset;
      }

      @Override
      public long monotonicNanos() {
        return base.monotonicNanos();
      }
    };
  }
}
