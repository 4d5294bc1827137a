package dev.leases.leader;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.spi.BoundedCalls;
import dev.leases.spi.FailureLog;
import dev.leases.spi.LocalDeadline;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one named lease for as long as it can and publishes the current fencing token: written once
 * over {@link LeaseStore}, so it behaves the same on every backend.
 *
 * <p>What it does, and why:
 * <ul>
 *   <li>Starts as "not leader", always — on start, after a detected pause and after a clock jump.
 *   <li>Renews every {@code renewInterval} (default {@code ttl/3}, so that two renewals may fail
 *       before the lease expires).
 *   <li>Treats a renewal that throws or times out as lost: "unknown" is "no". It stands down at once.
 *   <li>Stands down locally <em>before</em> the expiry the store promised: the local deadline is
 *       {@code send time + granted ttl - standDownMargin}, measured from when the renewal was sent,
 *       on both the monotonic and the wall clock; {@link #currentToken()} checks it on every read,
 *       so the token drops to 0 at the deadline even if the loop's thread is stuck.
 *   <li>Compares wall-clock and monotonic elapsed time between steps. A suspended VM's monotonic clock
 *       does not count the suspension, so a disagreement larger than {@code clockJumpTolerance} means
 *       a pause, a restore or a clock step: the loop stands down and takes a fresh holder id (a
 *       restored snapshot may be running twice), then contends again.
 *   <li>As a follower, sleeps until the expiry it last read from the store, or until the store hints
 *       that the lease was released. A follower asks with a one-name
 *       {@link LeaseStore#acquireOrRenewAll}: a store whose refusal says until when the lease is held
 *       costs one round trip per wake; with the SPI's default it reads the expiry with a second call,
 *       {@link LeaseStore#inspect}. A leader renews with the single call.
 *   <li>Releases the lease on {@link #close()}, so a clean shutdown hands over at once.
 *   <li>{@link #revoke()} is "revoke on the way in" for a platform that knows the process was
 *       restored from a snapshot or checkpoint — the one case the clock comparison cannot see, when
 *       both clocks were frozen with the process.
 * </ul>
 *
 * <p>Work reads {@link #currentToken()} once when it starts and passes that token to a fenced
 * resource with every write. The token is a promise about the past, not the present: only the
 * resource can reject a superseded holder.
 *
 * <p><b>Threads.</b> A loop owns no thread. Its steps run on a scheduler shared by every loop of the
 * process (2 to 4 daemon threads, {@code leases-loop-*}), its store calls on a shared pool of at most
 * {@value BoundedCalls#SHARED_MAX_IN_FLIGHT} daemon threads ({@code leases-call-*}; a call is
 * abandoned at its timeout, and when that many are still running further calls fail as unavailable,
 * so a hung store cannot pile up threads), and its listener callbacks on a shared pool
 * ({@code leases-listener-*}), one callback at a time per loop. The builder accepts your own
 * {@linkplain Builder#scheduler scheduler} and {@linkplain Builder#listenerExecutor listener
 * executor}.
 *
 * <p><b>Failures are visible.</b> A failing acquire attempt (store unreachable, bad credentials,
 * missing permissions) is logged at WARN with its cause the first time, then at most once a minute
 * with a count while it persists, and at INFO when it recovers.
 */
public final class LeaderLoop implements AutoCloseable, Revocable {

  private static final Logger log = LoggerFactory.getLogger(LeaderLoop.class);
  private static final Duration FAILURE_LOG_INTERVAL = Duration.ofMinutes(1);

  private final LeaseStore store;
  private final String name;
  private final Duration ttl;
  private final Duration renewInterval;
  private final Duration standDownMargin;
  private final Duration followerMaxWait;
  private final Duration retryBackoff;
  private final Duration callTimeout;
  private final LeaseClock clock;
  private final StoreCalls calls;
  private final ScheduledExecutorService scheduler;
  private final ListenerQueue events;
  private final FailureLog acquireFailures;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private boolean wakeRequested;
  private boolean stepRunning;
  private boolean started;
  private ScheduledFuture<?> pending;

  private volatile HolderId holder;
  private volatile Tenure tenure;
  private volatile boolean closed;
  /**
   * Whether the store may hold the lease for this loop: set when an acquire or renewal is sent,
   * cleared when one is refused. close() releases while it is set.
   */
  private volatile boolean mayHold;
  /** Bumped by {@link #revoke()}: a store call sent before a revoke must not set a tenure. */
  private volatile long epoch;
  private final ClockJumps clockJumps;
  private LeaseStore.Subscription subscription;

  private record Tenure(long token, LocalDeadline deadline) {}

  private LeaderLoop(Builder b) {
    this.store = b.store;
    this.name = b.name;
    this.ttl = b.ttl;
    this.renewInterval = b.renewInterval;
    this.standDownMargin = b.standDownMargin;
    this.clockJumps = new ClockJumps(b.clockJumpTolerance);
    this.followerMaxWait = b.followerMaxWait;
    this.retryBackoff = b.retryBackoff;
    this.callTimeout = b.callTimeout;
    this.clock = b.clock;
    this.holder = b.holder;
    this.calls = b.calls != null ? b.calls : StoreCalls.bounded(BoundedCalls.shared());
    this.scheduler = b.scheduler;
    this.events = new ListenerQueue(name, List.copyOf(b.listeners),
        b.listenerExecutor != null ? b.listenerExecutor : LeaseThreads.sharedListeners());
    this.acquireFailures = new FailureLog(log, "lease '" + name + "': acquire attempt",
        FAILURE_LOG_INTERVAL, clock);
  }

  /** Starts configuring a loop for lease {@code name} on {@code store}. */
  public static Builder builder(LeaseStore store, String name) {
    return new Builder(store, name);
  }

  /**
   * The fencing token while this loop is leader, 0 otherwise. Checked against the local deadline on
   * every call, so it is 0 once the lease may have expired even if the loop has not run since.
   */
  public long currentToken() {
    Tenure t = tenure;
    if (t == null || !t.deadline.isBefore(clock)) {
      return 0;
    }
    return t.token;
  }

  /** {@code currentToken() != 0}. */
  public boolean isLeader() {
    return currentToken() != 0;
  }

  /** The holder id this loop contends with now; it changes after a detected pause or clock jump. */
  public HolderId holder() {
    return holder;
  }

  /** The lease name. */
  public String name() {
    return name;
  }

  /** The TTL each acquire and renewal asks for. */
  public Duration ttl() {
    return ttl;
  }

  /** How often the leader renews. */
  public Duration renewInterval() {
    return renewInterval;
  }

  /**
   * Waits up to {@code timeout} (real time) for this loop to lead.
   *
   * @return the token, or 0 if it did not become leader in time or the loop was closed
   * @throws IllegalStateException if the loop was never {@linkplain #start() started}: it would
   *     never lead
   */
  public long awaitLeadership(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    lock.lock();
    try {
      if (!started && !closed) {
        throw new IllegalStateException("leader loop for '" + name + "' was not started: call"
            + " start() (or build with Builder.start()) before awaiting leadership");
      }
      long token;
      while ((token = currentToken()) == 0 && !closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return 0;
        }
        changed.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
      }
      return token;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Starts contending on the loop's scheduler. Idempotent. A failing release-hint subscription is
   * logged and the loop runs without hints (a follower then polls until the expiry it read).
   *
   * @throws LeaseStoreClosedException if the loop or its store is closed
   */
  public LeaderLoop start() {
    lock.lock();
    try {
      if (closed) {
        throw new LeaseStoreClosedException("leader loop for '" + name + "' is closed");
      }
      if (started) {
        return this;
      }
      try {
        subscription = store.onRelease(name, this::wake);
      } catch (LeaseStoreClosedException e) {
        throw e; // not started: nothing to contend on
      } catch (RuntimeException e) { // hints are only hints: contend and poll without them
        log.warn("lease '{}': release hints unavailable; a follower polls until the expiry it"
            + " read: {}", name, FailureLog.describe(e));
      }
      started = true;
      RestoreHooks.register(this);
      scheduleLocked(Duration.ZERO);
      return this;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Revoke on the way in: stands down at once (listeners hear {@link LossReason#REVOKED}), takes a
   * fresh holder id from fresh entropy, and contends again like a newly started loop. Call it when
   * the platform knows this process was restored from a snapshot or checkpoint, or may exist twice:
   * when both clocks were frozen with the process, the loop's own wall-versus-monotonic check sees
   * nothing. Checkpoint/restore hooks call it for you where the JVM has them
   * ({@code org.crac}, used by AWS SnapStart); see {@link RestoreHooks}. Thread-safe; a store call
   * in flight when it is called cannot make the loop leader under the old id.
   *
   * <p>The old holder id's tenure is not released (a second copy of this process may be using the
   * same id): it expires by its TTL, so leadership may pause for up to one TTL.
   */
  @Override
  public void revoke() {
    lock.lock();
    try {
      epoch++;
      holder = HolderId.generate();
      wakeRequested = true;
    } finally {
      lock.unlock();
    }
    log.warn("lease '{}': revoked (restore or explicit call); standing down and contending as {}",
        name, holder);
    standDown(LossReason.REVOKED);
    reschedule();
  }

  /**
   * Stops the loop and releases the lease (if this loop's holder id has it in the store, also after
   * a renewal whose outcome was unknown) so that a follower takes over at once.
   * Waits for a step in flight to finish (bounded by the call timeout). Listeners hear
   * {@code lost(CLOSED)} after every earlier event, on the listener thread, possibly after this
   * method returns.
   */
  @Override
  public void close() {
    ScheduledFuture<?> p;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      p = pending;
      pending = null;
      changed.signalAll();
      long waitUntil = System.nanoTime() + callTimeout.plusSeconds(1).toNanos();
      while (stepRunning) {
        long left = waitUntil - System.nanoTime();
        if (left <= 0) {
          log.warn("lease '{}': a step is still running after {}; closing anyway", name,
              callTimeout.plusSeconds(1));
          break;
        }
        changed.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p = null;
    } finally {
      lock.unlock();
    }
    if (p != null) {
      p.cancel(false);
    }
    RestoreHooks.unregister(this);
    if (subscription != null) {
      subscription.close();
    }
    standDown(LossReason.CLOSED);
    if (mayHold) {
      // also when not leading now: a renewal whose outcome was unknown may have left the lease
      // ours in the store. A release by a holder that does not have the lease changes nothing.
      HolderId h = holder;
      try {
        calls.call(() -> store.release(name, h), callTimeout);
      } catch (Exception | Error e) {
        log.warn("lease '{}': release on close failed; it will expire by its TTL: {}", name,
            FailureLog.describe(e));
      }
    }
  }

  private void runStep() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      stepRunning = true;
      pending = null;
    } finally {
      lock.unlock();
    }
    Duration next;
    try {
      next = step();
    } catch (RuntimeException | Error e) { // keep the schedule: the flags below must be reset
      log.error("lease '{}': unexpected error in leader loop", name, e);
      next = renewInterval;
    }
    lock.lock();
    try {
      stepRunning = false;
      changed.signalAll();
      if (wakeRequested && tenure == null) {
        next = Duration.ZERO;
      }
      wakeRequested = false;
      scheduleLocked(next);
    } finally {
      lock.unlock();
    }
  }

  private void scheduleLocked(Duration delay) {
    if (closed) {
      return;
    }
    try {
      pending = scheduler.schedule(this::runStep, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.error("lease '{}': the scheduler refused the next step (shut down?); the loop stops and"
          + " its token drops to 0 at the local deadline", name);
    }
  }

  /** A release hint or a revoke: run the next step now instead of at its scheduled time. */
  private void reschedule() {
    lock.lock();
    try {
      wakeRequested = true;
      if (started && !stepRunning && pending != null && pending.cancel(false)) {
        scheduleLocked(Duration.ZERO);
      }
    } finally {
      lock.unlock();
    }
  }

  private void wake() {
    if (tenure != null) {
      return;
    }
    reschedule();
  }

  /**
   * One round: detect pauses, enforce the local deadline, acquire or renew, and say how long to wait
   * before the next round. Package-private so that unit tests drive it with a manual clock.
   */
  Duration step() {
    if (closed) {
      return Duration.ZERO;
    }
    events.checkSlow(renewInterval.toNanos());
    long m0 = clock.monotonicNanos();
    long w0 = clock.wallMillis();
    String jump = clockJumps.check(m0, w0);
    if (jump != null) {
      log.warn("lease '{}': {}: paused, restored or clock stepped; standing down and contending"
          + " with a fresh holder id", name, jump);
      lock.lock();
      try {
        epoch++;
        holder = HolderId.generate();
      } finally {
        lock.unlock();
      }
      standDown(LossReason.CLOCK_JUMP);
    }
    Tenure t = tenure;
    if (t != null && !t.deadline.isBefore(m0, w0)) {
      log.warn("lease '{}': no renewal landed before the local deadline; standing down{}", name,
          events.pending() > 0 ? " (a listener callback is still running; it does not delay"
              + " renewals: look for a slow store or a paused process)" : "");
      standDown(LossReason.LOCAL_DEADLINE);
      t = null;
    }
    Duration timeout = callTimeout;
    if (t != null) {
      long left = t.deadline.nanosLeft(m0);
      timeout = Duration.ofNanos(Math.max(1_000_000L, Math.min(left, callTimeout.toNanos())));
    }
    HolderId h = holder;
    long sentEpoch = epoch;
    mayHold = true;
    AcquireResult answer;
    try {
      boolean renewing = t != null;
      answer = calls.call(() -> !renewing
          ? answerFor(store.acquireOrRenewAll(List.of(name), h, ttl))
          : renewal(store.acquireOrRenew(name, h, ttl)), timeout);
    } catch (LeaseStoreClosedException e) {
      log.warn("lease '{}': the store was closed under the leader loop; stopping", name);
      standDown(LossReason.RENEWAL_FAILED);
      closed = true;
      return Duration.ZERO;
    } catch (Exception | Error e) { // an Error too (a client's NoClassDefFoundError): unknown is no
      if (tenure != null) {
        log.warn("lease '{}': renewal failed, standing down (unknown is no): {}", name,
            FailureLog.describe(e));
        standDown(LossReason.RENEWAL_FAILED);
      } else {
        acquireFailures.failed(e);
      }
      return renewInterval;
    }
    acquireFailures.succeeded();
    Optional<LeaseGrant> result = answer.grant();
    if (result.isPresent()) {
      LeaseGrant g = result.get();
      Tenure previous;
      lock.lock();
      try {
        // the epoch check, the tenure and its event in one critical section: a revoke between
        // them would otherwise be undone (leader under the revoked id) or heard before the grant
        if (sentEpoch != epoch) {
          return Duration.ZERO;
        }
        previous = tenure;
        tenure = new Tenure(g.token(), LocalDeadline.after(m0, w0, g.ttl(), standDownMargin));
        changed.signalAll();
        if (previous == null) {
          events.post("acquired(" + g.token() + ")", l -> l.acquired(name, g.token()));
        } else if (previous.token != g.token()) {
          events.post("tokenAdvanced(" + previous.token + ", " + g.token() + ")",
              l -> l.tokenAdvanced(name, previous.token, g.token()));
        }
      } finally {
        lock.unlock();
      }
      if (previous == null) {
        log.info("lease '{}': leader with token {} as {}", name, g.token(), h);
      } else if (previous.token != g.token()) {
        log.warn("lease '{}': token advanced {} -> {}; in-flight work under the old token is fenced",
            name, previous.token, g.token());
      }
      long spent = clock.monotonicNanos() - m0;
      return Duration.ofNanos(Math.max(0, renewInterval.toNanos() - spent));
    }
    if (sentEpoch != epoch) {
      return Duration.ZERO;
    }
    mayHold = false; // refused: another holder has it
    if (tenure != null) {
      log.warn("lease '{}': renewal refused, another holder has it; standing down", name);
      standDown(LossReason.SUPERSEDED);
    }
    Optional<LeaseState.Held> heldBy = ((AcquireResult.Refused) answer).heldBy();
    Duration wait;
    if (heldBy.isPresent()) {
      wait = followerWait(heldBy.get()); // the store said until when: no second round trip
    } else {
      try {
        wait = followerWait(calls.call(() -> store.inspect(name), callTimeout));
      } catch (Exception | Error e) {
        log.debug("lease '{}': inspect failed: {}", name, e.toString());
        wait = renewInterval;
      }
    }
    return wait;
  }

  /**
   * A renewal's answer. Renewals use the single call: a native batch does more work per call, and
   * what only a batch refusal adds (who holds the name, until when) is rarely needed there — a
   * refused renewal falls back to one {@code inspect}.
   */
  private AcquireResult renewal(Optional<LeaseGrant> grant) {
    return grant.<AcquireResult>map(AcquireResult.Granted::new)
        .orElseGet(() -> AcquireResult.Refused.unexplained(name));
  }

  /** This loop's answer in a one-name batch; a store that leaves it out has failed the call. */
  private AcquireResult answerFor(Map<String, AcquireResult> answers) {
    AcquireResult a = answers.get(name);
    if (a == null) {
      throw new IllegalStateException("the store's acquireOrRenewAll answered no result for '"
          + name + "'");
    }
    return a;
  }

  /** Until the holder's lease expires (at most {@code followerMaxWait}), or a short backoff. */
  private Duration followerWait(LeaseState state) {
    if (!(state instanceof LeaseState.Held held)) {
      return retryBackoff;
    }
    Duration wait = held.remaining().plusMillis(1);
    return wait.compareTo(followerMaxWait) > 0 ? followerMaxWait : wait;
  }

  private void standDown(LossReason reason) {
    Tenure t;
    lock.lock();
    try {
      t = tenure;
      if (t == null) {
        return;
      }
      tenure = null;
      changed.signalAll();
      // under the lock, so that each event is queued in the order the state changed
      events.post("lost(" + t.token + ", " + reason + ")", l -> l.lost(name, t.token, reason));
    } finally {
      lock.unlock();
    }
  }

  /** Configures a {@link LeaderLoop}; {@link #build()} validates everything up front. */
  public static final class Builder extends LoopBuilder<Builder> {
    private final String name;
    private Duration followerMaxWait;
    private Duration retryBackoff;

    private Builder(LeaseStore store, String name) {
      super(store);
      this.name = LeaseArguments.requireName(name);
    }

    @Override
    Builder self() {
      return this;
    }

    /** Longest a follower sleeps between attempts when no release hint arrives; default {@code ttl}. */
    public Builder followerMaxWait(Duration wait) {
      this.followerMaxWait = wait;
      return this;
    }

    /** Pause after losing a race for a free lease; default {@code min(renewInterval/10, 50 ms)}. */
    public Builder retryBackoff(Duration backoff) {
      this.retryBackoff = backoff;
      return this;
    }

    /** Validates the configuration and builds a loop that is not started yet. */
    public LeaderLoop build() {
      Timings t = timings();
      Duration maxWait = followerMaxWait != null ? followerMaxWait : ttl;
      LeaseArguments.requirePositive("followerMaxWait", maxWait);
      Duration backoff = retryBackoff != null ? retryBackoff
          : min(t.renewInterval().dividedBy(10), Duration.ofMillis(50));
      if (backoff.isZero()) {
        backoff = Duration.ofMillis(1);
      }
      LeaseArguments.requirePositive("retryBackoff", backoff);
      Builder copy = this;
      copy.renewInterval = t.renewInterval();
      copy.standDownMargin = t.standDownMargin();
      copy.clockJumpTolerance = t.clockJumpTolerance();
      copy.followerMaxWait = maxWait;
      copy.retryBackoff = backoff;
      copy.callTimeout = t.callTimeout();
      if (copy.holder == null) {
        copy.holder = HolderId.generate();
      }
      if (copy.scheduler == null) {
        copy.scheduler = LeaseThreads.sharedScheduler();
      }
      return new LeaderLoop(copy);
    }

    /** {@code build().start()}. */
    public LeaderLoop start() {
      return build().start();
    }

    private static Duration min(Duration a, Duration b) {
      return a.compareTo(b) <= 0 ? a : b;
    }
  }
}
