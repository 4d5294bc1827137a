package dev.leases.time;

import java.time.Duration;
import java.time.Instant;

/**
 * A clock that moves only when told to, for tests. Thread-safe.
 *
 * <ul>
 *   <li>{@link #advance(Duration)}: time passes normally (both clocks move).
 *   <li>{@link #suspend(Duration)}: a VM suspension — wall time moves, monotonic time does not.
 *   <li>{@link #jumpWall(Duration)}: a wall-clock step (NTP, a restored guest's clock being fixed).
 * </ul>
 */
public final class ManualClock implements LeaseClock {

  private long wallMillis;
  private long monoNanos;

  /** Starts at {@code start}. */
  public ManualClock(Instant start) {
    this.wallMillis = start.toEpochMilli();
    this.monoNanos = 1_000_000_000L;
  }

  /** Starts at 2026-01-01T00:00:00Z. */
  public ManualClock() {
    this(Instant.parse("2026-01-01T00:00:00Z"));
  }

  @Override
  public synchronized long wallMillis() {
    return wallMillis;
  }

  @Override
  public synchronized long monotonicNanos() {
    return monoNanos;
  }

  /** Time passes: both clocks move by {@code d}. */
  public synchronized ManualClock advance(Duration d) {
    wallMillis += d.toMillis();
    monoNanos += d.toNanos();
    return this;
  }

  /** A suspension: the wall clock moves by {@code d}, the monotonic clock does not. */
  public synchronized ManualClock suspend(Duration d) {
    wallMillis += d.toMillis();
    return this;
  }

  /** A wall-clock step by {@code d} (negative steps back); the monotonic clock does not move. */
  public synchronized ManualClock jumpWall(Duration d) {
    wallMillis += d.toMillis();
    return this;
  }
}
