package dev.leases.benchmarks;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The nemesis run's checker: knows only the invariants, and reads only the history (grants reported
 * by the workers, writes as the fenced resource saw them, faults as the harness injected them).
 * Every time is on the harness's one {@link System#nanoTime()} clock. Pure: no I/O, no clock.
 *
 * <p>Rules, each a {@link Kind}:
 * <ol>
 *   <li>{@link Kind#TOKEN_SHARED}: one token granted to two holders.
 *   <li>{@link Kind#TOKEN_BACKWARDS}: a grant whose token is lower than that of a grant that
 *       <em>finished before it began</em>, or equal to it under another holder. A grant's interval is
 *       [its {@code TRY} acknowledged, its {@code GRANT} received]: the harness acknowledged the
 *       {@code TRY} before the worker sent the call, and received the {@code GRANT} after the call
 *       returned, so "A's report arrived before B's try was acknowledged" means A happened before B
 *       in real time. Grants whose intervals overlap are concurrent and not ordered (the order in
 *       which reports arrive is not the order of grants: a worker frozen between the store's answer
 *       and its report delivers it late). A grant without a known start orders nothing after it.
 *   <li>{@link Kind#WRITE_BACKWARDS}: an accepted write whose token is lower than an earlier
 *       accepted write of the <em>same</em> worker (resource order: one lock, one clock).
 *   <li>{@link Kind#STALE_WRITE}: an accepted write by a worker after another worker's first
 *       accepted write with a higher token (the stale leader got through).
 * </ol>
 *
 * <p>Liveness: for each fault, the time from its end to the next accepted write (any worker); the
 * largest is {@link Result#maxRecoveryNanos()}. A fault with no accepted write after it is
 * {@linkplain Result#unrecovered() unrecovered}.
 */
final class NemesisChecker {

  private NemesisChecker() {}

  /** Start of a grant whose {@code TRY} was not acknowledged. */
  static final long UNKNOWN = Long.MIN_VALUE;

  /** One grant (acquire or renewal) as a worker reported it. */
  record Grant(String worker, String holder, long token, long triedNanos, long reportedNanos) {}

  /** One injected fault; {@code endNanos == startNanos} for an instantaneous one (a clock step). */
  record Fault(String type, String target, long startNanos, long endNanos) {}

  enum Kind { TOKEN_SHARED, TOKEN_BACKWARDS, WRITE_BACKWARDS, STALE_WRITE }

  record Violation(Kind kind, String detail) {
    @Override
    public String toString() {
      return kind + ": " + detail;
    }
  }

  record Result(int changes, long accepted, long rejected, List<Violation> violations,
      long maxRecoveryNanos, List<Fault> unrecovered) {}

  static Result check(List<Grant> grants, List<WriteEvent> writes, List<Fault> faults) {
    List<Violation> v = new ArrayList<>();
    // 1. a token belongs to one holder
    Map<Long, Map<String, Grant>> holdersByToken = new HashMap<>();
    for (Grant g : grants) {
      Map<String, Grant> holders = holdersByToken.computeIfAbsent(g.token(),
          t -> new LinkedHashMap<>());
      if (!holders.isEmpty() && !holders.containsKey(g.holder())) {
        Grant first = holders.values().iterator().next();
        v.add(new Violation(Kind.TOKEN_SHARED, "token " + g.token() + " granted to " + first.holder()
            + " (" + first.worker() + ") and to " + g.holder() + " (" + g.worker() + ")"));
      }
      holders.putIfAbsent(g.holder(), g);
    }
    // 2. grants in real-time order never go backwards: sweep the tries in order, folding in every
    // grant reported before each try.
    List<Grant> byReport = grants.stream().sorted(Comparator.comparingLong(Grant::reportedNanos))
        .toList();
    List<Grant> byTry = grants.stream().filter(g -> g.triedNanos() != UNKNOWN)
        .sorted(Comparator.comparingLong(Grant::triedNanos)).toList();
    Grant highest = null;
    int r = 0;
    for (Grant b : byTry) {
      while (r < byReport.size() && byReport.get(r).reportedNanos() < b.triedNanos()) {
        Grant a = byReport.get(r++);
        if (highest == null || a.token() > highest.token()) {
          highest = a;
        }
      }
      if (highest == null) {
        continue;
      }
      if (b.token() < highest.token()) {
        v.add(new Violation(Kind.TOKEN_BACKWARDS, "token " + b.token() + " granted to "
            + b.holder() + " (" + b.worker() + ") after token " + highest.token() + " had been"
            + " granted to " + highest.holder() + " (" + highest.worker() + ")"));
      } else if (b.token() == highest.token() && !b.holder().equals(highest.holder())) {
        v.add(new Violation(Kind.TOKEN_BACKWARDS, "token " + b.token() + " granted again, to "
            + b.holder() + " (" + b.worker() + "), after it had been granted to "
            + highest.holder() + " (" + highest.worker() + ")"));
      }
    }
    // 3 and 4. accepted writes in the resource's order
    Map<String, Long> highestByWorker = new HashMap<>();
    WriteEvent top = null; // the first accepted write with the highest token so far
    long accepted = 0;
    long rejected = 0;
    for (WriteEvent w : writes) {
      if (!w.accepted()) {
        rejected++;
        continue;
      }
      accepted++;
      Long own = highestByWorker.get(w.worker());
      if (top != null && w.token() < top.token() && !top.worker().equals(w.worker())) {
        v.add(new Violation(Kind.STALE_WRITE, w.worker() + " wrote with token " + w.token()
            + " (seq " + w.seq() + ") and was accepted after " + top.worker() + " had written"
            + " with token " + top.token() + " (seq " + top.seq() + ")"));
      } else if (own != null && w.token() < own) {
        v.add(new Violation(Kind.WRITE_BACKWARDS, w.worker() + " wrote with token " + w.token()
            + " (seq " + w.seq() + ") and was accepted after its own accepted write with token "
            + own));
      }
      highestByWorker.merge(w.worker(), w.token(), Math::max);
      if (top == null || w.token() > top.token()) {
        top = w;
      }
    }
    // liveness
    long maxRecovery = 0;
    List<Fault> unrecovered = new ArrayList<>();
    List<WriteEvent> acceptedWrites = writes.stream().filter(WriteEvent::accepted).toList();
    for (Fault f : faults) {
      WriteEvent next = firstAtOrAfter(acceptedWrites, f.endNanos());
      if (next == null) {
        unrecovered.add(f);
      } else {
        maxRecovery = Math.max(maxRecovery, next.atNanos() - f.endNanos());
      }
    }
    int changes = changes(grants);
    return new Result(changes, accepted, rejected, v, maxRecovery, unrecovered);
  }

  /** Distinct tokens granted, less the first: each new tenure after the first is one change. */
  static int changes(List<Grant> grants) {
    return (int) Math.max(0, grants.stream().mapToLong(Grant::token).distinct().count() - 1);
  }

  private static WriteEvent firstAtOrAfter(List<WriteEvent> sorted, long at) {
    int lo = 0;
    int hi = sorted.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (sorted.get(mid).atNanos() < at) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < sorted.size() ? sorted.get(lo) : null;
  }
}
