package dev.leases.leader;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.spi.BoundedCalls;
import dev.leases.spi.FailureLog;
import dev.leases.spi.LocalDeadline;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
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
 * Holds a changing set of named leases for one process at a constant number of store round trips:
 * one renewal round every {@code renewInterval} (default {@code ttl/3}) renews every held name and
 * tries every free one with {@linkplain LeaseStore#acquireOrRenewAll batch calls} of at most
 * {@value LeaseStore#MAX_BATCH_SIZE} names, so 10,000 names cost one call a round on a store
 * with a native batch, not 10,000. Use it for partitions, tenants or shards that many processes
 * share out; use {@link LeaderLoop} for one name.
 *
 * <p>Each name behaves as under its own {@link LeaderLoop}:
 * <ul>
 *   <li>Every name starts as "not held"; {@link #add} adds it, {@link #remove} stands it down at once
 *       and releases it in the next round.
 *   <li>{@link #currentToken(String)} is the name's fencing token while the group holds it, 0
 *       otherwise, checked against that name's local deadline on every call ({@code send time of the
 *       batch that last granted it + granted ttl - standDownMargin}, on both clocks).
 *   <li>Unknown is no: a batch call that throws or times out loses every name in it at once.
 *   <li>A wall-versus-monotonic disagreement between rounds (a pause, a restore, a clock step) stands
 *       every name down and the group takes a fresh holder id; so does {@link #revoke()}.
 *   <li>{@link #close()} releases every held name with batch calls.
 * </ul>
 *
 * <p><b>Shared fate.</b> A store may tie all names of a batch to one server-side lease or session:
 * losing it loses them all. The group never infers one name's state from another's: each keeps its
 * own deadline, and work must carry the name's own token to a fenced resource.
 *
 * <p><b>Threads and calls.</b> The group owns no thread: its rounds run on the scheduler shared by
 * every loop of the process, its store calls (one at a time, each bounded) on the shared call pool,
 * its listener callbacks on the shared listener pool, one at a time for the whole group, in order.
 * A round's renewal batches go first; it sends each when the previous one returned, with a timeout
 * no later than the earliest local deadline in it. Free names are tried once a round, and at once
 * when the store hints that one of them was released; a follower takes over a crashed holder's name
 * within one TTL plus one renew interval. The first failing batch of free names ends that part of
 * the round, so a dead store does not hold up the next round's renewals.
 *
 * <p><b>Listeners</b> hear {@link LeaderListener#acquired}, {@link LeaderListener#lost} and
 * {@link LeaderListener#tokenAdvanced} with the name, under the races {@link LeaderListener} states.
 * A name removed with {@link #remove} is reported {@code lost(name, token, CLOSED)}.
 */
public final class LeaseGroup implements AutoCloseable, Revocable {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);
  private static final Duration FAILURE_LOG_INTERVAL = Duration.ofMinutes(1);

  private final LeaseStore store;
  private final String label;
  private final Timings timings;
  private final LeaseClock clock;
  private final StoreCalls calls;
  private final ScheduledExecutorService scheduler;
  private final ListenerQueue events;
  private final FailureLog acquireFailures;
  private final ClockJumps clockJumps;

  /** Guards membership, tenures, the holder, the epoch and the schedule. */
  private final ReentrantLock lock = new ReentrantLock();
  private final Map<String, Member> members = new ConcurrentHashMap<>();
  /** Names removed (or granted after their removal) that the next round releases. */
  private final Set<String> toRelease = new LinkedHashSet<>();
  private volatile HolderId holder;
  /** Bumped by a revoke or clock jump: a batch sent before it must not set tenures. */
  private long epoch;
  private boolean started;
  private volatile boolean closed;
  private final Condition roundEnded = lock.newCondition();
  private boolean roundRunning;
  private boolean wakeRequested;
  private ScheduledFuture<?> pending;

  private record Tenure(long token, LocalDeadline deadline) {}

  private static final class Member {
    final String name;
    volatile Tenure tenure; // written under the lock
    /**
     * Whether the store may hold the name for the group: set when a batch with it is sent, cleared
     * when the name is refused; close() releases the name while it is set. Under the lock.
     */
    boolean mayHold;
    volatile LeaseStore.Subscription subscription; // set once, after subscribing

    Member(String name) {
      this.name = name;
    }
  }

  private LeaseGroup(Builder b, Timings timings) {
    this.store = b.store;
    this.label = b.label;
    this.timings = timings;
    this.clock = b.clock;
    this.holder = b.holder != null ? b.holder : HolderId.generate();
    this.calls = b.calls != null ? b.calls : StoreCalls.bounded(BoundedCalls.shared());
    this.scheduler = b.scheduler != null ? b.scheduler : LeaseThreads.sharedScheduler();
    this.events = new ListenerQueue(label, List.copyOf(b.listeners),
        b.listenerExecutor != null ? b.listenerExecutor : LeaseThreads.sharedListeners());
    this.acquireFailures = new FailureLog(log, "lease group '" + label + "': acquire batch",
        FAILURE_LOG_INTERVAL, clock);
    this.clockJumps = new ClockJumps(timings.clockJumpTolerance());
  }

  /** Starts configuring a group on {@code store}. */
  public static Builder builder(LeaseStore store) {
    return new Builder(store);
  }

  /**
   * Adds {@code name}: the group contends for it from its next round (at once if started). Returns
   * false if it is already a member. Subscribes to the store's release hints for the name, which on
   * some stores waits once, for the first subscription, up to the store's call timeout; a
   * subscription that fails is logged and the name is a member without hints (tried every round).
   *
   * @throws IllegalArgumentException for a malformed name
   * @throws LeaseStoreClosedException if the group is closed
   */
  public boolean add(String name) {
    LeaseArguments.requireName(name);
    Member m = new Member(name);
    lock.lock();
    try {
      ensureOpen();
      if (members.putIfAbsent(name, m) != null) {
        return false;
      }
      // removed and added back before its release was sent: the lease (same holder id) is the
      // one this member will renew, so a release sent later would free what the group reports held
      toRelease.remove(name);
    } finally {
      lock.unlock();
    }
    try {
      m.subscription = store.onRelease(name, () -> hint(m));
    } catch (RuntimeException e) { // hints are only hints: the name is a member all the same
      log.warn("lease group '{}': release hints for '{}' unavailable; it is tried every round: {}",
          label, name, FailureLog.describe(e));
    }
    if (m.subscription != null && members.get(name) != m) {
      m.subscription.close(); // removed (or the group closed) while subscribing
    }
    wake();
    return true;
  }

  /**
   * Removes {@code name}: its token drops to 0 at once, listeners hear {@code lost(CLOSED)} if it
   * was held, and the next round (started at once) releases it in the store. Returns false if it
   * was not a member.
   */
  public boolean remove(String name) {
    Member m;
    lock.lock();
    try {
      m = members.remove(name);
      if (m == null) {
        return false;
      }
      toRelease.add(name);
      standDown(m, LossReason.CLOSED);
    } finally {
      lock.unlock();
    }
    if (m.subscription != null) {
      m.subscription.close();
    }
    wake();
    return true;
  }

  /**
   * {@code name}'s fencing token while the group holds it, 0 otherwise (also for a name that is not
   * a member). Checked against the name's local deadline on every call, so it is 0 once the lease
   * may have expired even if no round has run since.
   */
  public long currentToken(String name) {
    Member m = members.get(name);
    Tenure t = m == null ? null : m.tenure;
    return t == null || !t.deadline.isBefore(clock) ? 0 : t.token;
  }

  /** The members now, in no particular order. */
  public Set<String> names() {
    return Set.copyOf(members.keySet());
  }

  /** The members whose {@link #currentToken} is not 0 now, sorted. */
  public Set<String> heldNames() {
    Set<String> held = new TreeSet<>();
    for (Member m : members.values()) {
      if (currentToken(m.name) != 0) {
        held.add(m.name);
      }
    }
    return held;
  }

  /** The holder id the group contends with now; it changes after a clock jump or revoke. */
  public HolderId holder() {
    return holder;
  }

  /** The TTL each acquire and renewal asks for. */
  public Duration ttl() {
    return timings.ttl();
  }

  /** How often a renewal round runs. */
  public Duration renewInterval() {
    return timings.renewInterval();
  }

  /** Starts the rounds on the group's scheduler. Idempotent. */
  public LeaseGroup start() {
    lock.lock();
    try {
      ensureOpen();
      if (!started) {
        started = true;
        RestoreHooks.register(this);
        scheduleLocked(Duration.ZERO);
      }
      return this;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Revoke on the way in, as {@link LeaderLoop#revoke()}: every name stands down at once
   * ({@code lost(REVOKED)}), the group takes a fresh holder id and contends again. The old id's
   * tenures are not released (a second copy of this process may be using it): they expire.
   */
  @Override
  public void revoke() {
    lock.lock();
    try {
      newHolderLocked();
      standDownAll(LossReason.REVOKED);
    } finally {
      lock.unlock();
    }
    log.warn("lease group '{}': revoked (restore or explicit call); contending as {}", label,
        holder);
    wake();
  }

  /**
   * Stops the rounds, waits for one in flight (bounded by the call timeout), stands every name down
   * ({@code lost(CLOSED)}) and releases the names it holds with batch calls (also those whose last
   * batch had an unknown outcome), so followers take over at once. A release that fails is logged; those names expire by their TTL.
   */
  @Override
  public void close() {
    ScheduledFuture<?> p;
    List<Member> all;
    Set<String> release = new LinkedHashSet<>();
    HolderId h;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      p = pending;
      pending = null;
      awaitRoundLocked();
      all = new ArrayList<>(members.values());
      for (Member m : all) {
        // not only the held ones: a batch whose outcome was unknown may have left a name ours
        if (m.tenure != null || m.mayHold) {
          release.add(m.name);
        }
      }
      standDownAll(LossReason.CLOSED);
      members.clear();
      release.addAll(toRelease);
      toRelease.clear();
      h = holder;
    } finally {
      lock.unlock();
    }
    if (p != null) {
      p.cancel(false);
    }
    RestoreHooks.unregister(this);
    for (Member m : all) {
      if (m.subscription != null) {
        m.subscription.close();
      }
    }
    releaseInBatches(new ArrayList<>(release), h);
  }

  private void awaitRoundLocked() {
    long left = timings.callTimeout().plusSeconds(1).toNanos();
    try {
      while (roundRunning && left > 0) {
        left = roundEnded.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (roundRunning) {
      log.warn("lease group '{}': a round is still running; closing anyway", label);
    }
  }

  // ---------------------------------------------------------------- the round

  private void runRound() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      roundRunning = true;
      pending = null;
    } finally {
      lock.unlock();
    }
    Duration next;
    try {
      next = round();
    } catch (RuntimeException | Error e) { // keep the schedule: the flags below must be reset
      log.error("lease group '{}': unexpected error in a round", label, e);
      next = timings.renewInterval();
    }
    lock.lock();
    try {
      roundRunning = false;
      roundEnded.signalAll();
      if (wakeRequested) {
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
      pending = scheduler.schedule(this::runRound, Math.max(0, delay.toNanos()),
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.error("lease group '{}': the scheduler refused the next round (shut down?); tokens drop"
          + " to 0 at their local deadlines", label);
    }
  }

  /** Runs the next round now, or right after the one running. */
  private void wake() {
    lock.lock();
    try {
      wakeRequested = roundRunning;
      if (started && !roundRunning && pending != null && pending.cancel(false)) {
        scheduleLocked(Duration.ZERO);
      }
    } finally {
      lock.unlock();
    }
  }

  private void hint(Member m) {
    if (m.tenure == null) {
      wake();
    }
  }

  /**
   * One round: detect clock jumps, enforce local deadlines, release removed names, renew held names
   * and try free ones in batches; returns the delay to the next round. Package-private so that unit
   * tests drive it with a manual clock.
   */
  Duration round() {
    if (closed) {
      return Duration.ZERO;
    }
    events.checkSlow(timings.renewInterval().toNanos());
    long m0 = clock.monotonicNanos();
    String jump = clockJumps.check(m0, clock.wallMillis());
    if (jump != null) {
      log.warn("lease group '{}': {}: paused, restored or clock stepped; standing every name down"
          + " and contending with a fresh holder id", label, jump);
      lock.lock();
      try {
        newHolderLocked();
        standDownAll(LossReason.CLOCK_JUMP);
      } finally {
        lock.unlock();
      }
    }
    releasePending();
    List<Member> held = new ArrayList<>();
    List<Member> free = new ArrayList<>();
    for (Member m : members.values()) {
      (m.tenure != null ? held : free).add(m);
    }
    // close() waits for the batch in flight, not for a whole round: stop between batches
    for (List<Member> batch : batches(held)) {
      if (closed) {
        return Duration.ZERO;
      }
      contend(batch, true);
    }
    for (List<Member> batch : batches(free)) {
      if (closed || !contend(batch, false)) {
        break;
      }
    }
    releasePending(); // names removed while their batch was in flight
    long spent = clock.monotonicNanos() - m0;
    return Duration.ofNanos(Math.max(0, timings.renewInterval().toNanos() - spent));
  }

  private static List<List<Member>> batches(List<Member> all) {
    List<List<Member>> out = new ArrayList<>();
    for (int i = 0; i < all.size(); i += LeaseStore.MAX_BATCH_SIZE) {
      out.add(all.subList(i, Math.min(all.size(), i + LeaseStore.MAX_BATCH_SIZE)));
    }
    return out;
  }

  /**
   * Sends one batch and applies its answers. For renewals, members past their local deadline are
   * stood down first and the call's timeout ends no later than the earliest deadline left.
   *
   * @return false if the call failed
   */
  private boolean contend(List<Member> batch, boolean renewing) {
    long m0 = clock.monotonicNanos();
    long w0 = clock.wallMillis();
    List<Member> sent = new ArrayList<>(batch.size());
    List<String> names = new ArrayList<>(batch.size());
    long timeoutNanos = timings.callTimeout().toNanos();
    HolderId h;
    long sentEpoch;
    lock.lock();
    try {
      for (Member m : batch) {
        Tenure t = m.tenure;
        if (renewing && (t == null || !t.deadline.isBefore(m0, w0))) {
          if (t != null) {
            log.warn("lease group '{}': no renewal of '{}' landed before its local deadline;"
                + " standing it down", label, m.name);
            standDown(m, LossReason.LOCAL_DEADLINE);
          }
          continue;
        }
        if (renewing) {
          timeoutNanos = Math.min(timeoutNanos, t.deadline.nanosLeft(m0));
        }
        sent.add(m);
        names.add(m.name);
        m.mayHold = true;
      }
      h = holder;
      sentEpoch = epoch;
    } finally {
      lock.unlock();
    }
    if (names.isEmpty()) {
      return true;
    }
    Duration timeout = Duration.ofNanos(Math.max(1_000_000L, timeoutNanos));
    Map<String, AcquireResult> answers;
    try {
      answers = calls.call(() -> store.acquireOrRenewAll(names, h, timings.ttl()), timeout);
    } catch (Exception | Error e) { // an Error too (a client's NoClassDefFoundError): unknown is no
      boolean storeClosed = e instanceof LeaseStoreClosedException;
      if (storeClosed) {
        log.warn("lease group '{}': the store was closed under the group; stopping", label);
        closed = true;
      }
      if (renewing) {
        log.warn("lease group '{}': renewal of {} names failed, standing them all down (unknown is"
            + " no): {}", label, names.size(), FailureLog.describe(e));
      } else {
        acquireFailures.failed(e);
      }
      lock.lock();
      try {
        // a closed store ends the group: names held by earlier batches will not be renewed either
        for (Member m : storeClosed ? members.values() : batch) {
          standDown(m, LossReason.RENEWAL_FAILED);
        }
      } finally {
        lock.unlock();
      }
      return false;
    }
    acquireFailures.succeeded();
    lock.lock();
    try {
      if (sentEpoch != epoch) {
        return true; // answered to a holder id revoked meanwhile: it must not lead
      }
      for (Member m : sent) {
        apply(m, answers.get(m.name), h, m0, w0);
      }
    } finally {
      lock.unlock();
    }
    return true;
  }

  /** One name's answer, under the lock; the batch was sent at {@code m0}, {@code w0}. */
  private void apply(Member m, AcquireResult answer, HolderId h, long m0, long w0) {
    boolean member = members.get(m.name) == m;
    if (answer instanceof AcquireResult.Granted granted) {
      LeaseGrant g = granted.lease();
      if (!member) {
        if (!members.containsKey(m.name)) {
          toRelease.add(m.name); // removed while the batch was in flight
        } // else added back meanwhile: the new member renews this very lease
        return;
      }
      Tenure previous = m.tenure;
      m.tenure = new Tenure(g.token(),
          LocalDeadline.after(m0, w0, g.ttl(), timings.standDownMargin()));
      if (previous == null) {
        log.debug("lease group '{}': '{}' held with token {} as {}", label, m.name, g.token(), h);
        events.post("acquired(" + m.name + ", " + g.token() + ")",
            l -> l.acquired(m.name, g.token()));
      } else if (previous.token != g.token()) {
        log.warn("lease group '{}': token of '{}' advanced {} -> {}; in-flight work under the old"
            + " token is fenced", label, m.name, previous.token, g.token());
        events.post("tokenAdvanced(" + m.name + ", " + previous.token + ", " + g.token() + ")",
            l -> l.tokenAdvanced(m.name, previous.token, g.token()));
      }
    } else if (answer == null) {
      log.warn("lease group '{}': the store answered nothing for '{}'; treating it as lost",
          label, m.name);
      standDown(m, LossReason.RENEWAL_FAILED);
    } else {
      m.mayHold = false; // refused: another holder has it
      if (m.tenure != null) {
        log.warn("lease group '{}': renewal of '{}' refused, another holder has it; standing it"
            + " down", label, m.name);
        standDown(m, LossReason.SUPERSEDED);
      }
    }
  }

  private void releasePending() {
    List<String> names;
    HolderId h;
    lock.lock();
    try {
      names = new ArrayList<>(toRelease);
      toRelease.clear();
      h = holder;
    } finally {
      lock.unlock();
    }
    releaseInBatches(names, h);
  }

  private void releaseInBatches(List<String> names, HolderId h) {
    for (int i = 0; i < names.size(); i += LeaseStore.MAX_BATCH_SIZE) {
      List<String> batch = names.subList(i, Math.min(names.size(), i + LeaseStore.MAX_BATCH_SIZE));
      try {
        calls.call(() -> store.releaseAll(batch, h), timings.callTimeout());
      } catch (Exception | Error e) {
        log.warn("lease group '{}': releasing {} names failed; they expire by their TTL: {}",
            label, batch.size(), FailureLog.describe(e));
      }
    }
  }

  /** A fresh holder id; tenures and pending releases of the old one are dropped. Under the lock. */
  private void newHolderLocked() {
    epoch++;
    holder = HolderId.generate();
    toRelease.clear();
  }

  private void standDownAll(LossReason reason) {
    for (Member m : members.values()) {
      standDown(m, reason);
    }
  }

  /** Under the lock, so that each name's events are queued in the order they happened. */
  private void standDown(Member m, LossReason reason) {
    Tenure t = m.tenure;
    if (t == null) {
      return;
    }
    m.tenure = null;
    events.post("lost(" + m.name + ", " + t.token + ", " + reason + ")",
        l -> l.lost(m.name, t.token, reason));
  }

  private void ensureOpen() {
    if (closed) {
      throw new LeaseStoreClosedException("lease group '" + label + "' is closed");
    }
  }

  /** Configures a {@link LeaseGroup}; {@link #build()} validates everything up front. */
  public static final class Builder extends LoopBuilder<Builder> {
    private String label = "lease-group";

    private Builder(LeaseStore store) {
      super(store);
    }

    @Override
    Builder self() {
      return this;
    }

    /** A name for the group in log lines; default {@code lease-group}. */
    public Builder label(String label) {
      this.label = LeaseArguments.requireText("group label", label, LeaseArguments.MAX_NAME_LENGTH);
      return this;
    }

    /** Validates the configuration and builds a group that is not started yet. */
    public LeaseGroup build() {
      return new LeaseGroup(this, timings());
    }

    /** {@code build().start()}. */
    public LeaseGroup start() {
      return build().start();
    }
  }
}
