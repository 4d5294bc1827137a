package dev.leases.once;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.time.LeaseClock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A ledger in this JVM's memory, for tests and for users of
 * {@link dev.leases.memory.InMemoryLeaseStore}. It has no transaction ({@code T} is {@code Void}):
 * the work runs, then the completion is recorded only if the job's fence is still at most the
 * attempt's token and no other attempt completed the run; a refused completion does not undo the
 * work (see {@link RunLedger} on key-value ledgers). Times come from the injected clock's wall time.
 * Thread-safe.
 */
public final class InMemoryRunLedger implements RunLedger<@Nullable Void> {

  private final LeaseClock clock;
  private final Map<String, Long> fences = new HashMap<>();
  private final Map<String, List<RunRecord>> attempts = new HashMap<>();
  private long nextAttempt = 1;

  /** A ledger judged by the system clock. */
  public InMemoryRunLedger() {
    this(LeaseClock.system());
  }

  /** A ledger whose record times come from {@code clock}. */
  public InMemoryRunLedger(LeaseClock clock) {
    this.clock = Objects.requireNonNull(clock, "clock must not be null");
  }

  @Override
  public synchronized Optional<RunRecord> completion(String job, String run) {
    RunKeys.check(job, run);
    return attempts.getOrDefault(job, List.of()).stream()
        .filter(r -> r.run().equals(run) && r.status() == RunRecord.Status.COMPLETED)
        .findFirst();
  }

  @Override
  public synchronized RunRecord begin(String job, String run, long token, HolderId holder) {
    RunKeys.check(job, run);
    Objects.requireNonNull(holder, "holder must not be null");
    long fence = fences.getOrDefault(job, 0L);
    if (fence > token) {
      throw new FencedOutException(RunKeys.leaseName(job), token, fence);
    }
    fences.put(job, token);
    Optional<RunRecord> done = completion(job, run);
    if (done.isPresent()) {
      return done.get();
    }
    RunRecord started = new RunRecord(job, run, nextAttempt++, token, holder, clock.wallInstant(),
        null, RunRecord.Status.STARTED, null);
    attempts.computeIfAbsent(job, j -> new ArrayList<>()).add(started);
    return started;
  }

  @Override
  public RunRecord complete(RunRecord attempt, Consumer<@Nullable Void> work) {
    RunKeys.requireStarted(attempt);
    work.accept(null);
    synchronized (this) {
      long fence = fences.getOrDefault(attempt.job(), 0L);
      if (fence > attempt.token()) {
        throw new FencedOutException(RunKeys.leaseName(attempt.job()), attempt.token(), fence);
      }
      Optional<RunRecord> done = completion(attempt.job(), attempt.run());
      if (done.isPresent()) {
        return done.get();
      }
      return replace(attempt, RunRecord.Status.COMPLETED, null);
    }
  }

  @Override
  public synchronized RunRecord fail(RunRecord attempt, String failure) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(failure, "failure must not be null");
    return replace(attempt, RunRecord.Status.FAILED, RunRecord.failureText(failure));
  }

  @Override
  public synchronized List<RunRecord> history(String job, int limit) {
    RunKeys.checkJob(job);
    RunKeys.checkLimit(limit);
    List<RunRecord> all = new ArrayList<>(attempts.getOrDefault(job, List.of()));
    java.util.Collections.reverse(all);
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }

  /** Replaces the attempt's record if it is still STARTED; returns the record as it now stands. */
  private RunRecord replace(RunRecord attempt, RunRecord.Status status, String failure) {
    List<RunRecord> list = attempts.getOrDefault(attempt.job(), List.of());
    for (int i = 0; i < list.size(); i++) {
      RunRecord r = list.get(i);
      if (r.attempt() == attempt.attempt()) {
        if (r.status() != RunRecord.Status.STARTED) {
          return r;
        }
        RunRecord next = new RunRecord(r.job(), r.run(), r.attempt(), r.token(), r.holder(),
            r.started(), clock.wallInstant(), status, failure);
        list.set(i, next);
        return next;
      }
    }
    throw new IllegalArgumentException("attempt " + attempt.attempt() + " of job '" + attempt.job()
        + "' was not begun in this ledger");
  }

}
