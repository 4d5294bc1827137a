package dev.leases.spi;

import dev.leases.time.LeaseClock;
import java.time.Duration;

/**
 * When a holder must consider its lease gone, by its own clocks: {@code send time + granted ttl -
 * margin}, counted from when the acquire or renewal was <em>sent</em> (the store may have judged it
 * at any moment after), on both the monotonic and the wall clock. Either clock passing its deadline
 * ends the tenure: a suspended VM's monotonic clock does not count the suspension, a stepped wall
 * clock does not count real time.
 *
 * @param monoNanos the deadline on {@link LeaseClock#monotonicNanos()}
 * @param wallMillis the deadline on {@link LeaseClock#wallMillis()}
 */
public record LocalDeadline(long monoNanos, long wallMillis) {

  /** The deadline of a grant of {@code grantedTtl} whose request was sent at the given readings. */
  public static LocalDeadline after(long sentMonoNanos, long sentWallMillis, Duration grantedTtl,
      Duration margin) {
    return new LocalDeadline(sentMonoNanos + grantedTtl.toNanos() - margin.toNanos(),
        sentWallMillis + grantedTtl.toMillis() - margin.toMillis());
  }

  /** Whether both readings are still before the deadline. */
  public boolean isBefore(long monoNanos, long wallMillis) {
    return monoNanos - this.monoNanos < 0 && wallMillis < this.wallMillis;
  }

  /** Whether {@code clock} reads before the deadline now. */
  public boolean isBefore(LeaseClock clock) {
    return isBefore(clock.monotonicNanos(), clock.wallMillis());
  }

  /** Monotonic time left at {@code monoNanos}, negative once passed. */
  public long nanosLeft(long monoNanos) {
    return this.monoNanos - monoNanos;
  }
}
