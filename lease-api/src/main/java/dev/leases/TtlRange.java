package dev.leases;

import java.time.Duration;
import java.util.Objects;

/**
 * The TTLs a store can honour: {@code min <= ttl <= max}, granted in multiples of
 * {@code granularity} (a store rounds a request up to the next multiple and reports what it granted).
 */
public record TtlRange(Duration min, Duration max, Duration granularity) {

  /** Checks that {@code 0 < min <= max} and the granularity is positive. */
  public TtlRange {
    LeaseArguments.requirePositive("min", min);
    LeaseArguments.requirePositive("max", max);
    LeaseArguments.requirePositive("granularity", granularity);
    if (max.compareTo(min) < 0) {
      throw new IllegalArgumentException("max " + max + " is below min " + min);
    }
  }

  /**
   * Returns {@code ttl} if this range accepts it, or throws an {@link IllegalArgumentException}
   * that names the range.
   */
  public Duration check(Duration ttl) {
    Objects.requireNonNull(ttl, "ttl must not be null");
    if (ttl.compareTo(min) < 0 || ttl.compareTo(max) > 0) {
      throw new IllegalArgumentException(
          "ttl " + ttl + " is outside the range this store supports: " + this
              + "; choose a ttl within it");
    }
    return ttl;
  }

  /** {@code ttl} rounded up to a multiple of the granularity. */
  public Duration roundUp(Duration ttl) {
    long g = granularity.toNanos();
    long t = ttl.toNanos();
    long rounded = ((t + g - 1) / g) * g;
    return Duration.ofNanos(rounded);
  }

  @Override
  public String toString() {
    return "[" + min + ", " + max + "] in steps of " + granularity;
  }
}
