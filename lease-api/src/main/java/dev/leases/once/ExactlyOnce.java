package dev.leases.once;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.leader.RestoreHooks;
import dev.leases.leader.Revocable;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.jspecify.annotations.Nullable;

/**
 * Runs "job J, run R" so that its work completes exactly once, however many processes fire it and
 * at whatever skew: a lease on the job keeps runners from overlapping, and a {@link RunLedger}
 * records the completion under the lease's fencing token, so that a second firing sees "done" and
 * a superseded runner cannot complete.
 *
 * <pre>{@code
 * ExactlyOnce<Connection> once = ExactlyOnce.builder(store, JdbcRunLedger.builder(pool).build())
 *     .ttl(Duration.ofSeconds(30)).build();
 * RunOutcome outcome = once.run("invoice-run", "2026-01-31", (connection, ctx) -> {
 *   // writes on connection commit together with the completion record
 * });
 * }</pre>
 *
 * <p>{@link #run} does, in order:
 * <ol>
 *   <li>Asks the ledger; a completed run returns {@link RunOutcome.AlreadyCompleted} at once.
 *   <li>Sends one bounded acquire-or-renew of the job's lease {@code once/<job>} (job names are
 *       therefore at most {@link RunKeys#MAX_JOB_LENGTH} characters; do not use lease names under
 *       {@code once/} for anything else). Not granted: asks the ledger again and returns
 *       {@code AlreadyCompleted} or {@link RunOutcome.RunningElsewhere}. It never waits for the
 *       lease. The lease is per job: two runs of one job never overlap.
 *   <li>Begins an attempt in the ledger under the grant's token (raising the job's fence), then runs
 *       the work inside {@link RunLedger#complete}, which records the completion with the same
 *       token. Meanwhile the lease is renewed in the background every {@code ttl/3}; a renewal that
 *       fails, times out or is refused makes {@link RunContext#isHeld()} false.
 *   <li>Releases the lease, whatever happened.
 * </ol>
 *
 * <p>Races and what decides them:
 * <ul>
 *   <li>A runner paused or partitioned past its TTL is taken over by the next firing elsewhere; the
 *       successor's begin raises the fence, so the old runner's completion is refused with
 *       {@link FencedOutException} (its transactional writes roll back). The work is not
 *       interrupted: check {@link RunContext#isHeld()} to stop early.
 *   <li>Work that throws: the attempt is recorded {@link RunRecord.Status#FAILED}, the lease is
 *       released and {@link RunFailedException} (cause: the work's exception) is thrown; the run
 *       stays incomplete and the next firing runs it again.
 *   <li>A runner that dies leaves its attempt STARTED and its lease to expire; firings within the
 *       TTL get {@code RunningElsewhere}, the first one after it runs the work.
 *   <li>Whether the work's <em>effect</em> is exactly once depends on the ledger: see
 *       {@link RunLedger}.
 * </ul>
 *
 * <p>Thread-safe. One instance uses one holder id, so it does not run the same job twice at once:
 * a second concurrent {@code run} of a job on the same instance returns {@code RunningElsewhere}
 * with this instance's holder. Store failures throw {@link dev.leases.LeaseStoreUnavailableException}.
 * {@link #close()} stops the renewal thread; it closes neither the store nor the ledger.
 *
 * @param <T> the ledger's resource type, which the work receives
 */
public final class ExactlyOnce<T extends @Nullable Object> implements AutoCloseable, Revocable {

  private static final Logger log = LoggerFactory.getLogger(ExactlyOnce.class);

  private final LeaseStore store;
  private final RunLedger<T> ledger;
  private volatile HolderId holder;
  private final Duration ttl;
  private final LeaseKeeper keeper;
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private ExactlyOnce(Builder<T> b, Duration renew, Duration margin, Duration callTimeout) {
    this.store = b.store;
    this.ledger = b.ledger;
    this.holder = b.holder != null ? b.holder : HolderId.generate();
    this.ttl = b.ttl;
    this.keeper = new LeaseKeeper(store, b.clock, ttl, renew, margin, callTimeout);
    RestoreHooks.register(this);
  }

  /** Starts configuring a runner over {@code store} (the job leases) and {@code ledger}. */
  public static <T extends @Nullable Object> Builder<T> builder(LeaseStore store, RunLedger<T> ledger) {
    return new Builder<>(store, ledger);
  }

  /** The holder id this runner's leases are taken under now (a {@link #revoke} changes it). */
  public HolderId holder() {
    return holder;
  }

  /**
   * Revoke on the way in, as {@link dev.leases.leader.LeaderLoop#revoke()}: for a process that
   * was restored from a snapshot or checkpoint, or may exist twice. Later runs take their leases
   * under a fresh holder id. Runs in progress lose their lease ({@link RunContext#isHeld()} turns
   * false, renewals stop) and may not complete: a run whose work returns after the revoke throws
   * {@link FencedOutException} with its writes rolled back and nothing recorded, because the
   * original process may be running the very same attempt under the same token, which no fence
   * can tell apart; its lease is not released (the original may hold it) and expires by its TTL.
   * A completion already committing when the revoke lands still commits. {@link RestoreHooks}
   * calls this after a restore through {@code org.crac}, and {@link RestoreHooks#revokeAll()}
   * does too. Thread-safe.
   */
  @Override
  public void revoke() {
    holder = HolderId.generate();
    int revoked = keeper.revokeAll();
    log.warn("exactly-once runner revoked (restore or explicit call): {} run(s) in progress lost"
        + " their lease and will not complete; later runs take leases as {}", revoked, holder);
  }

  /** The TTL of the job's lease. */
  public Duration ttl() {
    return ttl;
  }

  /**
   * Runs (job, run) unless it has completed or another holder has the job's lease; never waits for
   * the lease.
   *
   * @return {@link RunOutcome.Completed} if this call ran the work and recorded its completion,
   *     {@link RunOutcome.AlreadyCompleted} or {@link RunOutcome.RunningElsewhere} if it did not run
   *     it
   * @throws RunFailedException if the work threw (recorded FAILED; the next firing retries)
   * @throws FencedOutException if another runner took the job over while this one ran (its lease
   *     lapsed): the completion was refused (recorded FAILED), and the work's transactional writes
   *     rolled back
   * @throws dev.leases.LeaseStoreUnavailableException if the store or ledger failed; the run may or
   *     may not have completed — fire again to find out
   * @throws IllegalArgumentException for a bad job name or run key
   */
  public RunOutcome run(String job, String run, RunWork<T> work) {
    RunKeys.check(job, run);
    Objects.requireNonNull(work, "work must not be null");
    if (closed) {
      throw new LeaseStoreClosedException("this ExactlyOnce is closed");
    }
    Optional<RunRecord> done = ledger.completion(job, run);
    if (done.isPresent()) {
      return new RunOutcome.AlreadyCompleted(done.get());
    }
    HolderId h = holder;
    if (!running.add(job)) {
      return new RunOutcome.RunningElsewhere(job, run, Optional.of(h), Optional.empty());
    }
    String lease = RunKeys.leaseName(job);
    try {
      Optional<LeaseKeeper.Held> acquired;
      try {
        acquired = keeper.acquire(lease, h);
      } catch (RuntimeException e) {
        release(lease, h, e); // the grant may have landed
        throw e;
      }
      if (acquired.isEmpty()) {
        return notGranted(job, run, lease);
      }
      try (LeaseKeeper.Held held = acquired.get().start()) {
        return runHeld(job, run, work, held, h);
      } finally {
        release(lease, h, null);
      }
    } finally {
      running.remove(job);
    }
  }

  private RunOutcome notGranted(String job, String run, String lease) {
    Optional<RunRecord> done = ledger.completion(job, run);
    if (done.isPresent()) {
      return new RunOutcome.AlreadyCompleted(done.get());
    }
    LeaseState state;
    try {
      state = keeper.call(() -> store.inspect(lease));
    } catch (RuntimeException e) {
      log.debug("lease '{}': inspect failed: {}", lease, e.toString());
      return new RunOutcome.RunningElsewhere(job, run, Optional.empty(), Optional.empty());
    }
    if (state instanceof LeaseState.Held h) {
      return new RunOutcome.RunningElsewhere(job, run, Optional.of(h.holder()),
          Optional.of(h.expiresAt()));
    }
    return new RunOutcome.RunningElsewhere(job, run, Optional.empty(), Optional.empty());
  }

  private RunOutcome runHeld(String job, String run, RunWork<T> work, LeaseKeeper.Held held,
      HolderId h) {
    long token = held.grant().token();
    RunRecord attempt = ledger.begin(job, run, token, h);
    if (attempt.status() == RunRecord.Status.COMPLETED) {
      return new RunOutcome.AlreadyCompleted(attempt);
    }
    Context ctx = new Context(attempt, held);
    Exception[] thrown = new Exception[1];
    RunRecord result;
    try {
      result = ledger.complete(attempt, resource -> {
        try {
          work.run(resource, ctx);
        } catch (Exception e) {
          thrown[0] = e;
          throw new WorkFailed(e);
        }
        if (held.revoked()) {
          throw new Revoked(attempt);
        }
      });
    } catch (Revoked e) {
      throw e.fencedOut(); // nothing recorded: the original process may own this attempt
    } catch (RuntimeException e) {
      if (thrown[0] != null) {
        recordFailure(attempt, RunRecord.describe(thrown[0]), e);
        throw new RunFailedException(job, run, token, thrown[0]);
      }
      if (e instanceof FencedOutException) {
        recordFailure(attempt, "fenced out: " + e.getMessage(), e);
      }
      throw e;
    }
    if (result.attempt() == attempt.attempt()) {
      return new RunOutcome.Completed(result);
    }
    ledger.fail(attempt, "attempt " + result.attempt() + " completed the run first");
    return new RunOutcome.AlreadyCompleted(result);
  }

  private void recordFailure(RunRecord attempt, String why, RuntimeException cause) {
    try {
      ledger.fail(attempt, why);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  /** Releases under {@code h}, unless the runner was revoked since (the original may hold it). */
  private void release(String lease, HolderId h, @Nullable RuntimeException cause) {
    if (h != holder) {
      return;
    }
    try {
      keeper.call(() -> store.release(lease, h));
    } catch (RuntimeException e) {
      if (cause != null) {
        cause.addSuppressed(e);
      } else {
        log.warn("lease '{}': release failed; it will expire by its TTL: {}", lease, e.toString());
      }
    }
  }

  /** Stops the renewal thread: runs still in progress lose their lease. Idempotent. */
  @Override
  public void close() {
    closed = true;
    RestoreHooks.unregister(this);
    keeper.close();
  }

  /** Ends the completion of a run whose lease was revoked, carried through the ledger. */
  private static final class Revoked extends RuntimeException {
    private final RunRecord attempt;

    Revoked(RunRecord attempt) {
      super("revoked", null, false, false);
      this.attempt = attempt;
    }

    FencedOutException fencedOut() {
      return new FencedOutException("the completion of attempt " + attempt.attempt() + " of run '"
          + attempt.run() + "' of job '" + attempt.job() + "' under token " + attempt.token()
          + " was refused: this runner was revoked (a restore, or an explicit revoke) while the"
          + " work ran, and the original process may run the same attempt under the same token,"
          + " which no fence can tell apart; the work's transactional writes were rolled back and"
          + " nothing was recorded. Do not retry here; fire the run again to learn its outcome",
          RunKeys.leaseName(attempt.job()), attempt.token(), -1);
    }
  }

  /** Carries the work's exception through the ledger, which rethrows it unchanged. */
  private static final class WorkFailed extends RuntimeException {
    WorkFailed(Exception cause) {
      super(cause.toString(), cause, false, false);
    }
  }

  private final class Context implements RunContext {
    private final RunRecord attempt;
    private final LeaseKeeper.Held held;

    Context(RunRecord attempt, LeaseKeeper.Held held) {
      this.attempt = attempt;
      this.held = held;
    }

    @Override
    public String job() {
      return attempt.job();
    }

    @Override
    public String run() {
      return attempt.run();
    }

    @Override
    public long token() {
      return attempt.token();
    }

    @Override
    public HolderId holder() {
      return attempt.holder();
    }

    @Override
    public long attempt() {
      return attempt.attempt();
    }

    @Override
    public boolean isHeld() {
      return held.isHeld();
    }
  }

  /** Configures an {@link ExactlyOnce}; {@link #build()} validates everything up front. */
  public static final class Builder<T extends @Nullable Object> {
    private final LeaseStore store;
    private final RunLedger<T> ledger;
    private Duration ttl;
    private Duration callTimeout;
    private LeaseClock clock = LeaseClock.system();
    private HolderId holder;

    private Builder(LeaseStore store, RunLedger<T> ledger) {
      this.store = Objects.requireNonNull(store, "store must not be null");
      this.ledger = Objects.requireNonNull(ledger, "ledger must not be null");
    }

    /**
     * The job lease's TTL (required, within the store's range). The lease is renewed every
     * {@code ttl/3} for as long as the work runs; a runner that dies blocks the job for up to one
     * TTL.
     */
    public Builder<T> ttl(Duration ttl) {
      this.ttl = ttl;
      return this;
    }

    /** Longest wait for one lease store call; default and maximum {@code ttl/3}. */
    public Builder<T> callTimeout(Duration callTimeout) {
      this.callTimeout = callTimeout;
      return this;
    }

    /** The clocks the local deadline is measured on; default the system's. */
    public Builder<T> clock(LeaseClock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /**
     * The holder id, default {@link HolderId#generate()}. Unique per instance: two instances with
     * one id would renew each other's lease.
     */
    public Builder<T> holder(HolderId holder) {
      this.holder = Objects.requireNonNull(holder, "holder must not be null");
      return this;
    }

    /**
     * The runner.
     *
     * @throws IllegalArgumentException if the TTL was not set or is out of the store's range
     */
    public ExactlyOnce<T> build() {
      if (ttl == null) {
        throw new IllegalArgumentException("ttl is required: call ttl(Duration) on the builder");
      }
      LeaseArguments.requirePositive("ttl", ttl);
      store.ttlRange().check(ttl);
      Duration renew = ttl.dividedBy(3);
      LeaseArguments.requirePositive("ttl/3", renew);
      Duration timeout = callTimeout != null ? callTimeout : renew;
      LeaseArguments.requireTimeout("callTimeout", timeout, renew);
      Duration margin = ttl.dividedBy(10);
      return new ExactlyOnce<>(this, renew, margin, timeout);
    }
  }
}
