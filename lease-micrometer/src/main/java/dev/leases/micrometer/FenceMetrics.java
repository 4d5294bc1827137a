package dev.leases.micrometer;

import dev.leases.FencedOutException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Counts fenced writes by result ({@value LeaseMeters#FENCE_WRITES}, tags {@code resource},
 * {@code result}) around any fence:
 *
 * <pre>{@code
 * FenceMetrics metrics = new FenceMetrics(registry);
 * metrics.record("billing", () -> fence.write("billing", token, work));
 * }</pre>
 *
 * {@link FencedOutException} counts as {@code rejected}, any other exception as {@code error};
 * exceptions pass through unchanged. Resource names become tag values: keep them a bounded set.
 */
public final class FenceMetrics {

  private final MeterRegistry registry;

  /** Meters registered in {@code registry}. */
  public FenceMetrics(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry must not be null");
  }

  /** Runs {@code write} and counts its result under {@code resource}. */
  public <T> T record(String resource, Supplier<T> write) {
    Objects.requireNonNull(write, "write must not be null");
    String result = "error";
    try {
      T value = write.get();
      result = "accepted";
      return value;
    } catch (FencedOutException e) {
      result = "rejected";
      throw e;
    } finally {
      Counter.builder(LeaseMeters.FENCE_WRITES)
          .tag("resource", resource == null ? "" : resource)
          .tag("result", result)
          .description("fenced writes by result")
          .register(registry)
          .increment();
    }
  }
}
