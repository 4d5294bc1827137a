package dev.leases.spring;

import dev.leases.once.RunOutcome;
import java.util.function.Supplier;

/** Observes exactly-once runs of {@link RunOnce} methods (the metrics auto-configuration times them). */
@FunctionalInterface
public interface RunRecorder {

  /** Records nothing. */
  RunRecorder NONE = (job, run) -> run.get();

  /** Runs {@code run}, a run of {@code job}, and returns or rethrows its result. */
  RunOutcome record(String job, Supplier<RunOutcome> run);
}
