package dev.leases.consul;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Parses the duration strings Consul answers with ({@code "10s"}, {@code "1m30s"}, {@code "1.5s"}). */
final class GoDuration {

  private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ms|us|µs|ns|h|m|s)");

  private GoDuration() {}

  /** The duration, or empty for anything that is not a positive Go duration. */
  static Optional<Duration> parse(@Nullable String text) {
    if (text == null || text.isEmpty()) {
      return Optional.empty();
    }
    Matcher m = PART.matcher(text);
    int at = 0;
    BigDecimal nanos = BigDecimal.ZERO;
    while (at < text.length()) {
      if (!m.find(at) || m.start() != at) {
        return Optional.empty();
      }
      long unit = switch (m.group(2)) {
        case "h" -> 3_600_000_000_000L;
        case "m" -> 60_000_000_000L;
        case "s" -> 1_000_000_000L;
        case "ms" -> 1_000_000L;
        case "us", "µs" -> 1_000L;
        default -> 1L;
      };
      nanos = nanos.add(new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(unit)));
      at = m.end();
    }
    try {
      long n = nanos.setScale(0, RoundingMode.CEILING).longValueExact();
      return n > 0 ? Optional.of(Duration.ofNanos(n)) : Optional.empty();
    } catch (ArithmeticException e) {
      return Optional.empty();
    }
  }
}
