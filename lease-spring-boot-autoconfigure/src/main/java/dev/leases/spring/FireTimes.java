package dev.leases.spring;

import java.lang.reflect.Method;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.format.datetime.standard.DurationFormatterUtils;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.support.CronExpression;

/**
 * The fire time of a {@code @Scheduled} method's current firing, computed the same way in every
 * process: for a cron, the latest cron time at or before now; for a fixed rate or delay, now
 * truncated to the period counted from the epoch. Built once per method; thread-safe.
 */
final class FireTimes {

  private static final Duration[] LOOKBACK = {Duration.ofSeconds(2), Duration.ofMinutes(2),
      Duration.ofHours(2), Duration.ofDays(2), Duration.ofDays(40), Duration.ofDays(400),
      Duration.ofDays(3000)};

  private final @Nullable CronExpression cron;
  private final ZoneId zone;
  private final long periodMillis;

  private FireTimes(@Nullable CronExpression cron, ZoneId zone, long periodMillis) {
    this.cron = cron;
    this.zone = zone;
    this.periodMillis = periodMillis;
  }

  /**
   * The schedule of {@code method}, empty if it has no {@code @Scheduled} with a cron, fixed rate
   * or fixed delay.
   *
   * @param resolver resolves {@code ${...}} placeholders in the annotation's strings
   * @throws IllegalArgumentException for a schedule that cannot be read, naming the method
   */
  static Optional<FireTimes> of(Method method, UnaryOperator<String> resolver) {
    Scheduled s = AnnotatedElementUtils.findMergedAnnotation(method, Scheduled.class);
    if (s == null) {
      return Optional.empty();
    }
    try {
      ZoneId zone = s.zone().isEmpty() ? ZoneId.systemDefault() : ZoneId.of(resolver.apply(s.zone()));
      String cron = resolver.apply(s.cron());
      if (!cron.isEmpty() && !cron.equals(Scheduled.CRON_DISABLED)) {
        return Optional.of(new FireTimes(CronExpression.parse(cron), zone, 0));
      }
      Duration period = period(s.fixedRate(), resolver.apply(s.fixedRateString()), s.timeUnit());
      if (period == null) {
        period = period(s.fixedDelay(), resolver.apply(s.fixedDelayString()), s.timeUnit());
      }
      if (period == null) {
        return Optional.empty();
      }
      if (period.toMillis() <= 0) {
        throw new IllegalArgumentException("the period must be at least 1 ms, was " + period);
      }
      return Optional.of(new FireTimes(null, zone, period.toMillis()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("cannot derive @RunOnce run keys from the @Scheduled of "
          + method + ": " + e.getMessage() + "; give the run key with @RunOnce(run = \"...\")", e);
    }
  }

  private static @Nullable Duration period(long value, String text, TimeUnit unit) {
    if (value >= 0) {
      return Duration.ofNanos(unit.toNanos(value));
    }
    if (text == null || text.isEmpty()) {
      return null;
    }
    String t = text.trim();
    if (t.chars().allMatch(Character::isDigit)) {
      return Duration.ofNanos(unit.toNanos(Long.parseLong(t)));
    }
    return DurationFormatterUtils.detectAndParse(t);
  }

  ZoneId zone() {
    return zone;
  }

  /** The fire time of a firing happening at {@code now}. */
  Instant fireTime(Instant now) {
    if (cron == null) {
      long ms = now.toEpochMilli();
      return Instant.ofEpochMilli(Math.floorDiv(ms, periodMillis) * periodMillis);
    }
    ZonedDateTime at = now.atZone(zone);
    for (Duration back : LOOKBACK) {
      ZonedDateTime t = cron.next(at.minus(back));
      if (t != null && !t.isAfter(at)) {
        ZonedDateTime next;
        while ((next = cron.next(t)) != null && !next.isAfter(at)) {
          t = next;
        }
        return t.toInstant();
      }
    }
    return now; // a cron that has not fired in years: the firing is its own key
  }
}
