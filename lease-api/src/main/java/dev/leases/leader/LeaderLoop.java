package dev.leases.leader;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
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
 *       that the lease was released.
 *   <li>Releases the lease on {@link #close()}, so a clean shutdown hands over at once.
 * </ul>
 *
 * <p>Work reads {@link #currentToken()} once when it starts and passes that token to a fenced
 * resource with every write. The token is a promise about the past, not the present: only the
 * resource can reject a superseded holder.
 */
public final class LeaderLoop implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaderLoop.class);

  private final LeaseStore store;
  private final String name;
  private final Duration ttl;
  private final Duration renewInterval;
  private final Duration standDownMargin;
  private final Duration clockJumpTolerance;
  private final Duration followerMaxWait;
  private final Duration retryBackoff;
  private final Duration callTimeout;
  private final LeaseClock clock;
  private final List<LeaderListener> listeners;
  private final StoreCalls calls;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wakeup = lock.newCondition();
  private final Condition leadershipChanged = lock.newCondition();
  private boolean wakeRequested;

  private volatile HolderId holder;
  private volatile Tenure tenure;
  private volatile boolean closed;
  private boolean stepped;
  private long lastStepMono;
  private long lastStepWall;
  private Thread thread;
  private LeaseStore.Subscription subscription;

  private record Tenure(long token, long monoDeadline, long wallDeadline) {}

  private LeaderLoop(Builder b, StoreCalls calls) {
    this.store = b.store;
    this.name = b.name;
    this.ttl = b.ttl;
    this.renewInterval = b.renewInterval;
    this.standDownMargin = b.standDownMargin;
    this.clockJumpTolerance = b.clockJumpTolerance;
    this.followerMaxWait = b.followerMaxWait;
    this.retryBackoff = b.retryBackoff;
    this.callTimeout = b.callTimeout;
    this.clock = b.clock;
    this.listeners = List.copyOf(b.listeners);
    this.holder = b.holder;
    this.calls = calls;
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
    if (t == null || !withinDeadline(t, clock.monotonicNanos(), clock.wallMillis())) {
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

  public String name() {
    return name;
  }

  public Duration ttl() {
    return ttl;
  }

  public Duration renewInterval() {
    return renewInterval;
  }

  /**
   * Waits up to {@code timeout} (real time) for this loop to lead.
   *
   * @return the token, or 0 if it did not become leader in time
   */
  public long awaitLeadership(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    lock.lock();
    try {
      long token;
      while ((token = currentToken()) == 0 && !closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return 0;
        }
        leadershipChanged.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
      }
      return token;
    } finally {
      lock.unlock();
    }
  }

  /** Starts the loop's daemon thread. Idempotent. */
  public LeaderLoop start() {
    lock.lock();
    try {
      if (closed) {
        throw new LeaseStoreClosedException("leader loop for '" + name + "' is closed");
      }
      if (thread != null) {
        return this;
      }
      subscription = store.onRelease(name, this::wake);
      thread = new Thread(this::run, "leases-leader-" + name);
      thread.setDaemon(true);
      thread.start();
      return this;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the loop and, if it leads, releases the lease so that a follower takes over at once.
   * Waits for an in-flight store call to finish (bounded by the call timeout).
   */
  @Override
  public void close() {
    Thread t;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      wakeRequested = true;
      wakeup.signalAll();
      leadershipChanged.signalAll();
      t = thread;
    } finally {
      lock.unlock();
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(callTimeout.plus(renewInterval).toMillis() + 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (subscription != null) {
      subscription.close();
    }
    Tenure held = tenure;
    if (held != null) {
      standDown(LossReason.CLOSED);
      HolderId h = holder;
      try {
        calls.call(() -> store.release(name, h), callTimeout);
      } catch (Exception e) {
        log.warn("lease '{}': release on close failed; it will expire by its TTL", name, e);
      }
    }
    calls.close();
  }

  private void run() {
    while (!closed) {
      Duration next;
      try {
        next = step();
      } catch (RuntimeException e) {
        log.error("lease '{}': unexpected error in leader loop", name, e);
        next = renewInterval;
      }
      sleep(next);
    }
  }

  private void sleep(Duration d) {
    long nanos = d.toNanos();
    lock.lock();
    try {
      long end = System.nanoTime() + nanos;
      while (!wakeRequested && !closed) {
        long left = end - System.nanoTime();
        if (left <= 0) {
          break;
        }
        wakeup.awaitNanos(left);
      }
      wakeRequested = false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    } finally {
      lock.unlock();
    }
  }

  private void wake() {
    if (tenure != null) {
      return;
    }
    lock.lock();
    try {
      wakeRequested = true;
      wakeup.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * One round: detect pauses, enforce the local deadline, acquire or renew, and say how long to wait
   * before the next round. Package-private so that unit tests drive it with a manual clock.
   */
  Duration step() {
    if (closed) {
      return Duration.ZERO;
    }
    long m0 = clock.monotonicNanos();
    long w0 = clock.wallMillis();
    if (stepped) {
      long monoMs = (m0 - lastStepMono) / 1_000_000L;
      long wallMs = w0 - lastStepWall;
      if (Math.abs(wallMs - monoMs) > clockJumpTolerance.toMillis()) {
        log.warn("lease '{}': wall clock moved {} ms while monotonic time moved {} ms: paused,"
            + " restored or clock stepped; standing down and contending with a fresh holder id",
            name, wallMs, monoMs);
        standDown(LossReason.CLOCK_JUMP);
        holder = HolderId.generate();
      }
    }
    Tenure t = tenure;
    if (t != null && !withinDeadline(t, m0, w0)) {
      log.warn("lease '{}': no renewal landed before the local deadline; standing down", name);
      standDown(LossReason.LOCAL_DEADLINE);
      t = null;
    }
    Duration timeout = callTimeout;
    if (t != null) {
      long left = t.monoDeadline - m0;
      timeout = Duration.ofNanos(Math.max(1_000_000L, Math.min(left, callTimeout.toNanos())));
    }
    HolderId h = holder;
    Optional<LeaseGrant> result;
    try {
      result = calls.call(() -> store.acquireOrRenew(name, h, ttl), timeout);
    } catch (LeaseStoreClosedException e) {
      log.warn("lease '{}': the store was closed under the leader loop; stopping", name);
      standDown(LossReason.RENEWAL_FAILED);
      closed = true;
      return Duration.ZERO;
    } catch (Exception e) {
      if (tenure != null) {
        log.warn("lease '{}': renewal failed, standing down (unknown is no): {}", name, e.toString());
        standDown(LossReason.RENEWAL_FAILED);
      } else {
        log.debug("lease '{}': acquire attempt failed: {}", name, e.toString());
      }
      markStep();
      return renewInterval;
    }
    if (result.isPresent()) {
      LeaseGrant g = result.get();
      Tenure previous = tenure;
      Tenure next = new Tenure(
          g.token(),
          m0 + g.ttl().toNanos() - standDownMargin.toNanos(),
          w0 + g.ttl().toMillis() - standDownMargin.toMillis());
      setTenure(next);
      if (previous == null) {
        log.info("lease '{}': leader with token {} as {}", name, g.token(), h);
        fire(l -> l.acquired(name, g.token()));
      } else if (previous.token != g.token()) {
        log.warn("lease '{}': token advanced {} -> {}; in-flight work under the old token is fenced",
            name, previous.token, g.token());
        fire(l -> l.tokenAdvanced(name, previous.token, g.token()));
      }
      markStep();
      long spent = clock.monotonicNanos() - m0;
      return Duration.ofNanos(Math.max(0, renewInterval.toNanos() - spent));
    }
    if (tenure != null) {
      log.warn("lease '{}': renewal refused, another holder has it; standing down", name);
      standDown(LossReason.SUPERSEDED);
    }
    Duration wait = retryBackoff;
    try {
      LeaseState state = calls.call(() -> store.inspect(name), callTimeout);
      if (state instanceof LeaseState.Held held) {
        wait = held.remaining().plusMillis(1);
        if (wait.compareTo(followerMaxWait) > 0) {
          wait = followerMaxWait;
        }
      }
    } catch (Exception e) {
      log.debug("lease '{}': inspect failed: {}", name, e.toString());
      wait = renewInterval;
    }
    markStep();
    return wait;
  }

  private void markStep() {
    stepped = true;
    lastStepMono = clock.monotonicNanos();
    lastStepWall = clock.wallMillis();
  }

  private static boolean withinDeadline(Tenure t, long mono, long wall) {
    return mono - t.monoDeadline < 0 && wall < t.wallDeadline;
  }

  private void setTenure(Tenure t) {
    lock.lock();
    try {
      tenure = t;
      leadershipChanged.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void standDown(LossReason reason) {
    Tenure t = tenure;
    if (t == null) {
      return;
    }
    setTenure(null);
    fire(l -> l.lost(name, t.token, reason));
  }

  private void fire(java.util.function.Consumer<LeaderListener> event) {
    for (LeaderListener l : listeners) {
      try {
        event.accept(l);
      } catch (RuntimeException e) {
        log.warn("lease '{}': listener {} threw", name, l, e);
      }
    }
  }

  /** Configures a {@link LeaderLoop}; {@link #build()} validates everything up front. */
  public static final class Builder {
    private final LeaseStore store;
    private final String name;
    private Duration ttl;
    private Duration renewInterval;
    private Duration standDownMargin;
    private Duration clockJumpTolerance;
    private Duration followerMaxWait;
    private Duration retryBackoff;
    private Duration callTimeout;
    private LeaseClock clock = LeaseClock.system();
    private HolderId holder;
    private final List<LeaderListener> listeners = new ArrayList<>();
    private StoreCalls calls;

    private Builder(LeaseStore store, String name) {
      this.store = Objects.requireNonNull(store, "store must not be null");
      this.name = LeaseArguments.requireName(name);
    }

    /** The lease's TTL (required); must be within the store's {@link LeaseStore#ttlRange()}. */
    public Builder ttl(Duration ttl) {
      this.ttl = ttl;
      return this;
    }

    /** How often the leader renews; default {@code ttl/3}; at most {@code ttl/3}. */
    public Builder renewInterval(Duration renewInterval) {
      this.renewInterval = renewInterval;
      return this;
    }

    /** How long before the promised expiry the leader stands down; default {@code ttl/10}. */
    public Builder standDownMargin(Duration margin) {
      this.standDownMargin = margin;
      return this;
    }

    /**
     * How far wall and monotonic elapsed time may disagree between two rounds before the loop treats
     * it as a pause or clock jump; default {@code standDownMargin}.
     */
    public Builder clockJumpTolerance(Duration tolerance) {
      this.clockJumpTolerance = tolerance;
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

    /** Longest wait for one store call; default {@code renewInterval}. */
    public Builder callTimeout(Duration timeout) {
      this.callTimeout = timeout;
      return this;
    }

    /** The clocks to measure elapsed time with; default the system's. */
    public Builder clock(LeaseClock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** The holder id to start with; default {@link HolderId#generate()}. Never persist one. */
    public Builder holder(HolderId holder) {
      this.holder = Objects.requireNonNull(holder, "holder must not be null");
      return this;
    }

    public Builder listener(LeaderListener listener) {
      listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    Builder storeCalls(StoreCalls calls) {
      this.calls = calls;
      return this;
    }

    /** Validates the configuration and builds a loop that is not started yet. */
    public LeaderLoop build() {
      if (ttl == null) {
        throw new IllegalArgumentException("ttl is required: call ttl(Duration) on the builder");
      }
      LeaseArguments.requirePositive("ttl", ttl);
      store.ttlRange().check(ttl);
      Duration renew = renewInterval != null ? renewInterval : ttl.dividedBy(3);
      LeaseArguments.requirePositive("renewInterval", renew);
      if (renew.multipliedBy(3).compareTo(ttl) > 0) {
        throw new IllegalArgumentException("renewInterval " + renew + " leaves room for fewer than"
            + " two failed renewals within ttl " + ttl + "; use at most ttl/3 (" + ttl.dividedBy(3)
            + ")");
      }
      Duration margin = standDownMargin != null ? standDownMargin : ttl.dividedBy(10);
      LeaseArguments.requirePositive("standDownMargin", margin);
      if (margin.plus(renew.multipliedBy(2)).compareTo(ttl) >= 0) {
        throw new IllegalArgumentException("standDownMargin " + margin + " is too large for ttl "
            + ttl + " and renewInterval " + renew + ": margin + 2 x renewInterval must stay below"
            + " the ttl");
      }
      Duration jump = clockJumpTolerance != null ? clockJumpTolerance : margin;
      LeaseArguments.requirePositive("clockJumpTolerance", jump);
      Duration maxWait = followerMaxWait != null ? followerMaxWait : ttl;
      LeaseArguments.requirePositive("followerMaxWait", maxWait);
      Duration backoff = retryBackoff != null ? retryBackoff
          : min(renew.dividedBy(10), Duration.ofMillis(50));
      if (backoff.isZero()) {
        backoff = Duration.ofMillis(1);
      }
      LeaseArguments.requirePositive("retryBackoff", backoff);
      Duration timeout = callTimeout != null ? callTimeout : renew;
      LeaseArguments.requirePositive("callTimeout", timeout);
      Builder copy = this;
      copy.renewInterval = renew;
      copy.standDownMargin = margin;
      copy.clockJumpTolerance = jump;
      copy.followerMaxWait = maxWait;
      copy.retryBackoff = backoff;
      copy.callTimeout = timeout;
      if (copy.holder == null) {
        copy.holder = HolderId.generate();
      }
      StoreCalls c = calls != null ? calls : StoreCalls.bounded("leases-call-" + name);
      return new LeaderLoop(copy, c);
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
