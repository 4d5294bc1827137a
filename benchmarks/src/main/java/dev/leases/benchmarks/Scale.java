package dev.leases.benchmarks;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaseGroup;
import dev.leases.leader.LossReason;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.CountingLeaseStore;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One process holding many leases the way an application would: every name in ONE
 * {@link LeaseGroup} at a fixed TTL, renewed every TTL/3 by the group's own schedule with batch
 * calls ({@link LeaseStore#acquireOrRenewAll}, at most {@value LeaseStore#MAX_BATCH_SIZE} names
 * each) on the library's shared threads. Measured from outside the group:
 * <ul>
 *   <li>rounds, from the batch calls themselves ({@link BatchRounds}): a round is the batch calls
 *       of one renewal tick, from the first one's send to the last one's answer; store calls per round
 *       as {@link CountingLeaseStore} counts them (a batch is one call, native or not);
 *   <li>threads: live threads of this JVM just before the group is built, and the peak while it
 *       runs ({@link ThreadMXBean}); the delta is what holding the leases added;
 *   <li>held: every name must be acquired once and then keep that token until the group is closed
 *       — no {@code lost} other than the closing one, no {@code tokenAdvanced}, no second
 *       {@code acquired}, and {@link LeaseGroup#currentToken} equal to the first token after every
 *       measured round.
 * </ul>
 * A round's time includes a non-native store's one call per name inside its batch; whether the
 * store answers a batch natively is reported beside it.
 */
final class Scale {

  /**
   * @param batch "native" or "one call per name" (the SPI's default batch)
   * @param acquireMs from {@code start()} to the end of the first round (which acquires every name);
   *     NaN when that round did not complete within {@code acquireBound}
   * @param acquireCompleted whether every batch call of the first round answered within
   *     {@code acquireBound}; if not, the group gave up on it and heard none of its grants
   * @param acquireBound how long the group waits for one batch call: its call timeout, by default
   *     the renew interval (TTL/3)
   * @param renewRoundMs each measured renewal round, first batch sent to last batch answered
   * @param callsPerRound the most store calls one measured renewal round made
   * @param threadsBefore live threads of the JVM just before the group was built
   * @param threadsPeak the most live threads while the group ran
   * @param libraryThreads live threads named {@code leases-*} (the library's shared pools) at the
   *     end of the last measured round
   * @param newThreads the threads alive at the end of the last measured round that were not just
   *     before the group was built, by name with digits as {@code #}, e.g. {@code leases-call-# x2}
   * @param lost names not held continuously with one token from the first round to the close
   * @param late measured rounds that took longer than the renew interval
   * @param note what went wrong if the part did not get all its rounds, else empty
   */
  record Result(int leases, Duration ttl, Duration renewInterval, String batch, double acquireMs,
      boolean acquireCompleted, Duration acquireBound, List<Double> renewRoundMs, long callsPerRound, int threadsBefore, int threadsPeak,
      int libraryThreads, List<String> newThreads, int lost, int late, String note) {
    boolean allHeld() {
      return lost == 0 && note.isEmpty();
    }

    int threadsDelta() {
      return threadsPeak - threadsBefore;
    }
  }

  private Scale() {}

  /**
   * Holds {@code count} leases with TTL {@code ttl} (fitted to the store) in one group for the
   * acquire round plus {@code rounds} renewal rounds, then closes the group (releasing them).
   */
  static Result run(Backend backend, int count, int rounds, Duration wantTtl, String runId)
      throws Exception {
    List<String> names = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      names.add("bench-scale-" + runId + "-" + count + "-" + i);
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    try (LeaseStore raw = backend.openStore()) {
      CountingLeaseStore counting = new CountingLeaseStore(raw);
      BatchRounds store = new BatchRounds(counting, count);
      Duration ttl = Bench.fit(wantTtl, raw);
      Holding holding = new Holding();
      threads.resetPeakThreadCount();
      int before = threads.getThreadCount();
      Set<Thread> beforeThreads = Thread.getAllStackTraces().keySet();
      LeaseGroup group = LeaseGroup.builder(store).label("bench-scale-" + count).ttl(ttl)
          .listener(holding).build();
      Duration interval = group.renewInterval();
      Duration bound = interval; // the group's call timeout: not set here, so the renew interval
      String note = "";
      List<BatchRounds.Round> done;
      int peak;
      int library;
      List<String> added;
      long started;
      try {
        for (String n : names) {
          group.add(n);
        }
        started = System.nanoTime();
        group.start();
        // the acquire round, then `rounds` renewal rounds; a generous bound for stores that fall
        // behind (their rounds still end: each batch call is bounded by the group's call timeout)
        long deadline = started + ttl.multipliedBy(rounds + 3L).toNanos()
            + TimeUnit.SECONDS.toNanos(60);
        int checked = 0;
        boolean acquiredInTime = false;
        while (true) {
          int have = store.awaitRounds(checked + 1, deadline);
          if (have <= checked) {
            note = "only " + checked + " of " + (rounds + 1) + " rounds ended within "
                + Failover.ms(TimeUnit.NANOSECONDS.toMillis(deadline - started));
            break;
          }
          checked = have;
          if (!acquiredInTime) { // an acquire round: listener callbacks trail it a little
            BatchRounds.Round r = store.rounds().get(checked - 1);
            holding.awaitAcquired(r.granted(), deadline);
            acquiredInTime = r.completedWithin(bound); // else the next round acquires
          } else {
            holding.check(group, names); // after every renewal round: the first token, still valid
          }
          if (checked >= rounds + 1) {
            break;
          }
        }
        peak = threads.getPeakThreadCount();
        library = libraryThreads();
        added = newThreads(beforeThreads);
        done = store.rounds();
      } finally {
        group.close();
      }
      holding.awaitNoneHeld(System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
      boolean acquired = !done.isEmpty() && done.get(0).completedWithin(bound);
      double acquireMs = acquired ? (done.get(0).endNanos() - started) / 1e6 : Double.NaN;
      if (!done.isEmpty() && !acquired) {
        note = (notCompleted(bound) + "; " + note).replaceAll("; $", "");
      }
      List<Double> renewMs = new ArrayList<>();
      long callsPerRound = 0;
      int late = 0;
      for (BatchRounds.Round r : done.subList(Math.min(1, done.size()),
          Math.min(done.size(), rounds + 1))) {
        renewMs.add(r.millis());
        callsPerRound = Math.max(callsPerRound, r.calls());
        if (r.millis() > interval.toMillis()) {
          late++;
        }
      }
      int lost = holding.lost(names);
      return new Result(count, ttl, interval, nativeBatch(raw) ? "native" : "one call per name",
          acquireMs, acquired, bound, renewMs, callsPerRound, before, peak, library, added, lost, late, note);
    }
  }

  /** What the report says of a first round that did not complete within {@code bound}. */
  static String notCompleted(Duration bound) {
    return "the first acquire round did not complete within " + Failover.ms(bound.toMillis())
        + " (TTL/3, the group's bound on a batch call)";
  }

  /** Whether {@code store}'s class answers {@code acquireOrRenewAll} itself (not the default). */
  static boolean nativeBatch(LeaseStore store) {
    try {
      return store.getClass().getMethod("acquireOrRenewAll", Collection.class, HolderId.class,
          Duration.class).getDeclaringClass() != LeaseStore.class;
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<String> newThreads(Set<Thread> before) {
    Map<String, Integer> byName = new java.util.TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (!before.contains(t)) {
        byName.merge(t.getName().replaceAll("[0-9]+", "#"), 1, Integer::sum);
      }
    }
    List<String> out = new ArrayList<>();
    byName.forEach((n, c) -> out.add(c == 1 ? n : n + " x" + c));
    return out;
  }

  private static int libraryThreads() {
    return (int) Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("leases-")).count();
  }

  /** The group's listener: first token per name, and every sign that a name was not held. */
  private static final class Holding implements LeaderListener {
    final Map<String, Long> first = new ConcurrentHashMap<>();
    final Set<String> broken = ConcurrentHashMap.newKeySet();
    final AtomicInteger acquired = new AtomicInteger();
    /** acquired minus lost: names the listener last heard as held. */
    final AtomicInteger held = new AtomicInteger();

    @Override
    public void acquired(String name, long token) {
      if (first.putIfAbsent(name, token) != null) {
        broken.add(name); // acquired a second time: it was not held in between
      }
      acquired.incrementAndGet();
      held.incrementAndGet();
      signal();
    }

    @Override
    public void lost(String name, long token, LossReason reason) {
      if (reason != LossReason.CLOSED) {
        broken.add(name);
      }
      held.decrementAndGet();
      signal();
    }

    @Override
    public void tokenAdvanced(String name, long oldToken, long newToken) {
      broken.add(name);
    }

    void check(LeaseGroup group, List<String> names) {
      for (String n : names) {
        Long t = first.get(n);
        if (t == null || group.currentToken(n) != t) {
          broken.add(n);
        }
      }
    }

    int lost(List<String> names) {
      int never = 0;
      for (String n : names) {
        if (!first.containsKey(n) && !broken.contains(n)) {
          never++;
        }
      }
      return broken.size() + never;
    }

    private synchronized void signal() {
      notifyAll();
    }

    synchronized void awaitAcquired(int count, long deadline) throws InterruptedException {
      while (acquired.get() < count && !waitUntil(deadline)) {
        // loop
      }
    }

    /** Every acquired name has heard its {@code lost} (CLOSED comes after all else). */
    synchronized void awaitNoneHeld(long deadline) throws InterruptedException {
      while (held.get() > 0 && !waitUntil(deadline)) {
        // loop
      }
    }

    private boolean waitUntil(long deadline) throws InterruptedException {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return true;
      }
      TimeUnit.NANOSECONDS.timedWait(this, left);
      return false;
    }
  }

  /**
   * Groups the batch calls a {@link LeaseGroup} makes into its rounds, from outside: a round ends
   * when it has sent every one of the {@code expected} names, or when a batch repeats a name the
   * round already sent (a round sends each member at most once). Store calls per round are read
   * from the {@link CountingLeaseStore} underneath, before the round's first batch and after its
   * last. The group sends one call at a time, but a call it gave up on (past its call timeout) may
   * still be running when the next round starts: that round ends the earlier one, which then
   * counts as not answered.
   */
  static final class BatchRounds extends ForwardingLeaseStore {

    /**
     * One round: nanoTime of the first send and of the last answer (or, if a batch had not
     * answered, of the next round's first send), store calls, names sent, names granted, whether
     * every batch answered before the round ended, and the longest batch call.
     */
    record Round(long startNanos, long endNanos, long calls, int names, int granted,
        boolean answered, long longestCallNanos) {
      double millis() {
        return (endNanos - startNanos) / 1e6;
      }

      /**
       * Whether the group heard this round's answers: each batch answered, none later than
       * {@code bound} after it was sent (the group stops waiting for a call then).
       */
      boolean completedWithin(Duration bound) {
        return answered && longestCallNanos <= bound.toNanos();
      }
    }

    private final CountingLeaseStore counting;
    private final int expected;
    private final Set<String> sent = new HashSet<>();
    private final List<Round> rounds = new ArrayList<>();
    private boolean open;
    private long start;
    private long end;
    private long callsAtStart;
    private int granted;
    private int pending; // batch calls of the open round not answered yet
    private long longestCall;

    BatchRounds(CountingLeaseStore counting, int expected) {
      super(counting);
      this.counting = counting;
      this.expected = expected;
    }

    @Override
    public Map<String, AcquireResult> acquireOrRenewAll(Collection<String> names, HolderId holder,
        Duration ttl) {
      long t0 = System.nanoTime();
      synchronized (this) {
        if (open && names.stream().anyMatch(sent::contains)) {
          end = pending > 0 ? t0 : end;
          closeLocked();
        }
        if (!open) {
          open = true;
          start = t0;
          end = t0;
          callsAtStart = counting.calls();
          sent.clear();
          granted = 0;
          pending = 0;
          longestCall = 0;
        }
        sent.addAll(names);
        pending++;
      }
      Map<String, AcquireResult> answers = null;
      try {
        answers = delegate().acquireOrRenewAll(names, holder, ttl);
        return answers;
      } finally {
        long t1 = System.nanoTime();
        long g = answers == null ? 0
            : answers.values().stream().filter(a -> a instanceof AcquireResult.Granted).count();
        synchronized (this) {
          if (open && start - t0 <= 0) { // an answer of this round, not of one already ended
            end = t1;
            granted += (int) g;
            pending--;
            longestCall = Math.max(longestCall, t1 - t0);
            if (sent.size() >= expected) {
              closeLocked();
            }
          }
        }
      }
    }

    @Override
    public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
      return delegate().releaseAll(names, holder); // the store's own batch, not one per name
    }

    private void closeLocked() {
      rounds.add(new Round(start, end, counting.calls() - callsAtStart, sent.size(),
          granted, pending == 0, longestCall));
      open = false;
      notifyAll();
    }

    synchronized List<Round> rounds() {
      return List.copyOf(rounds);
    }

    /** Waits until {@code n} rounds have ended or {@code deadline} (nanoTime); returns how many. */
    synchronized int awaitRounds(int n, long deadline) throws InterruptedException {
      while (rounds.size() < n) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
      return rounds.size();
    }
  }
}
