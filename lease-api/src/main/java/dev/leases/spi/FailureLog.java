package dev.leases.spi;

import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.Objects;
import org.slf4j.Logger;

/**
 * Makes a failure that persists visible without flooding the log: the first failure is logged at
 * WARN with its cause, later ones at most once per {@code interval} with a count, and the recovery
 * once at INFO. Thread-safe; time comes from the injected clock's monotonic reading.
 */
public final class FailureLog {

  private final Logger log;
  private final String what;
  private final Duration interval;
  private final LeaseClock clock;
  private long failures;
  private long lastWarnNanos;
  private long firstFailureNanos;

  /**
   * @param what the subject of every message, e.g. {@code "lease 'billing': acquire"}
   * @param interval the shortest time between two WARN lines about the same ongoing failure
   */
  public FailureLog(Logger log, String what, Duration interval, LeaseClock clock) {
    this.log = Objects.requireNonNull(log, "log");
    this.what = Objects.requireNonNull(what, "what");
    this.interval = Objects.requireNonNull(interval, "interval");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Records a failed attempt; logs it at WARN if it is the first or {@code interval} has passed. */
  public void failed(Throwable cause) {
    long now = clock.monotonicNanos();
    long count;
    boolean first;
    synchronized (this) {
      first = failures == 0;
      failures++;
      count = failures;
      if (first) {
        firstFailureNanos = now;
      } else if (now - lastWarnNanos < interval.toNanos()) {
        log.debug("{} failed again: {}", what, describe(cause));
        return;
      }
      lastWarnNanos = now;
    }
    if (first) {
      log.warn("{} failed: {}", what, describe(cause));
    } else {
      log.warn("{} still failing: {} attempts in {} s, last: {}", what, count,
          (now - firstFailureNanos) / 1_000_000_000L, describe(cause));
    }
  }

  /** Records a successful attempt; logs the recovery at INFO if attempts had been failing. */
  public void succeeded() {
    long count;
    long since;
    synchronized (this) {
      if (failures == 0) {
        return;
      }
      count = failures;
      since = clock.monotonicNanos() - firstFailureNanos;
      failures = 0;
    }
    log.info("{} works again after {} failed attempts over {} s", what, count,
        since / 1_000_000_000L);
  }

  /** The number of failures since the last success. */
  public synchronized long failuresSinceSuccess() {
    return failures;
  }

  /** The exception and its causes in one line: the part of a stack trace a reader needs first. */
  public static String describe(Throwable t) {
    StringBuilder sb = new StringBuilder(String.valueOf(t));
    Throwable c = t.getCause();
    for (int depth = 0; c != null && c != t && depth < 5; depth++, c = c.getCause()) {
      sb.append("; caused by ").append(c);
    }
    return sb.toString();
  }
}
