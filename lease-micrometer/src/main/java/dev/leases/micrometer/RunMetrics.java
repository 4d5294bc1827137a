package dev.leases.micrometer;

import dev.leases.FencedOutException;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunFailedException;
import dev.leases.once.RunOutcome;
import dev.leases.once.RunWork;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Times exactly-once runs by outcome ({@value LeaseMeters#RUNS}, tags {@code job},
 * {@code outcome}): wrap {@link ExactlyOnce#run} in {@link #run}, or any call that returns a
 * {@link RunOutcome} in {@link #record}. Results and exceptions pass through unchanged.
 */
public final class RunMetrics {

  private final MeterRegistry registry;

  /** Meters registered in {@code registry}. */
  public RunMetrics(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry must not be null");
  }

  /** {@code once.run(job, run, work)}, timed under its outcome. */
  public <T> RunOutcome run(ExactlyOnce<T> once, String job, String run, RunWork<T> work) {
    Objects.requireNonNull(once, "once must not be null");
    return record(job, () -> once.run(job, run, work));
  }

  /** Runs {@code call} (an exactly-once run of {@code job}) and times it under its outcome. */
  public RunOutcome record(String job, Supplier<RunOutcome> call) {
    long start = System.nanoTime();
    String outcome = "error";
    try {
      RunOutcome o = call.get();
      outcome = outcomeTag(o);
      return o;
    } catch (RunFailedException e) {
      outcome = "failed";
      throw e;
    } catch (FencedOutException e) {
      outcome = "fenced_out";
      throw e;
    } finally {
      Timer.builder(LeaseMeters.RUNS)
          .tag("job", job == null ? "" : job)
          .tag("outcome", outcome)
          .description("exactly-once runs by outcome")
          .register(registry)
          .record(Duration.ofNanos(System.nanoTime() - start));
    }
  }

  /** The {@code outcome} tag value of {@code outcome}. */
  public static String outcomeTag(RunOutcome outcome) {
    if (outcome instanceof RunOutcome.Completed) {
      return "completed";
    }
    if (outcome instanceof RunOutcome.AlreadyCompleted) {
      return "already_completed";
    }
    return "running_elsewhere";
  }
}
