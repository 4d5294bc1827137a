package dev.leases.micrometer;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * A {@link LeaseStore} decorator that times every acquire-or-renew ({@value LeaseMeters#RENEWAL},
 * tags {@code lease}, {@code outcome}) and counts calls that throw ({@value
 * LeaseMeters#STORE_ERRORS}, tags {@code operation}, {@code exception}). It changes no behaviour:
 * results and exceptions pass through unchanged. Lease names become tag values, so use it with a
 * bounded set of names (leader leases, job names), not one name per request.
 */
public final class MeteredLeaseStore extends ForwardingLeaseStore {

  private final MeterRegistry registry;

  /** Times every call to {@code delegate} into {@code registry}. */
  public MeteredLeaseStore(LeaseStore delegate, MeterRegistry registry) {
    super(delegate);
    this.registry = Objects.requireNonNull(registry, "registry must not be null");
  }

  /** The store calls are passed to. */
  public LeaseStore unwrap() {
    return delegate();
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    long start = System.nanoTime();
    String outcome = "error";
    try {
      Optional<LeaseGrant> grant = counted("acquire_or_renew",
          () -> super.acquireOrRenew(name, holder, ttl));
      outcome = grant.isPresent() ? "granted" : "refused";
      return grant;
    } finally {
      Timer.builder(LeaseMeters.RENEWAL)
          .tag("lease", name == null ? "" : name)
          .tag("outcome", outcome)
          .description("acquire-or-renew calls to the lease store")
          .register(registry)
          .record(Duration.ofNanos(System.nanoTime() - start));
    }
  }

  @Override
  public boolean release(String name, HolderId holder) {
    return counted("release", () -> super.release(name, holder));
  }

  @Override
  public OptionalLong token(String name) {
    return counted("token", () -> super.token(name));
  }

  @Override
  public LeaseState inspect(String name) {
    return counted("inspect", () -> super.inspect(name));
  }

  private <R> R counted(String operation, Supplier<R> call) {
    try {
      return call.get();
    } catch (RuntimeException | Error e) {
      Counter.builder(LeaseMeters.STORE_ERRORS)
          .tag("operation", operation)
          .tag("exception", e.getClass().getSimpleName())
          .description("lease store calls that threw")
          .register(registry)
          .increment();
      throw e;
    }
  }

  @Override
  public String toString() {
    return "Metered[" + delegate() + "]";
  }
}
