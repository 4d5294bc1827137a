package dev.leases.benchmarks;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/** Turns the fenced resource's write log and the fault's facts into one trial's figures. */
final class GapAnalysis {

  /** {@link Long#MIN_VALUE} for {@code expiryAtNanos}: the lease was released (clean close). */
  static final long RELEASED = Long.MIN_VALUE;

  /** {@link Long#MAX_VALUE} for {@code expiryAtNanos}: the expiry is not known (bound NaN). */
  static final long UNKNOWN = Long.MAX_VALUE;

  private GapAnalysis() {}

  /**
   * One failover trial.
   *
   * @param gapMs old leader's last accepted write → new leader's first accepted write (NaN: none)
   * @param boundMs the least gap physics allows: from that last write to the lease's expiry as the
   *     store reported it after the fault (0 for a released lease)
   * @param staleAttempts writes the old leader attempted after the new leader's first write
   * @param staleRejected of those, rejected by the fence
   * @param staleAccepted of those, accepted — a safety violation
   */
  record Trial(String scenario, int number, String oldWorker, long oldToken, String newWorker,
      long newToken, double gapMs, double boundMs, int staleAttempts, int staleRejected,
      int staleAccepted, String note) {

    double excessMs() {
      return gapMs - boundMs;
    }
  }

  static Trial analyze(String scenario, int number, List<WriteEvent> events, String oldWorker,
      long oldToken, long expiryAtNanos) {
    WriteEvent firstNew = null;
    for (WriteEvent e : events) {
      if (e.accepted() && !e.worker().equals(oldWorker) && e.token() > oldToken) {
        firstNew = e;
        break;
      }
    }
    if (firstNew == null) {
      return new Trial(scenario, number, oldWorker, oldToken, null, 0, Double.NaN, Double.NaN,
          0, 0, 0, "no other worker wrote with a larger token: no takeover");
    }
    WriteEvent lastOld = null;
    for (WriteEvent e : events) {
      if (e.atNanos() >= firstNew.atNanos()) {
        break;
      }
      if (e.accepted() && e.worker().equals(oldWorker) && e.token() == oldToken) {
        lastOld = e;
      }
    }
    int attempts = 0;
    int accepted = 0;
    for (WriteEvent e : events) {
      if (e.worker().equals(oldWorker) && e.atNanos() > firstNew.atNanos()) {
        attempts++;
        if (e.accepted()) {
          accepted++;
        }
      }
    }
    if (lastOld == null) {
      return new Trial(scenario, number, oldWorker, oldToken, firstNew.worker(), firstNew.token(),
          Double.NaN, Double.NaN, attempts, attempts - accepted, accepted,
          "the old leader had no accepted write before the takeover");
    }
    double gap = ms(firstNew.atNanos() - lastOld.atNanos());
    double bound = expiryAtNanos == RELEASED ? 0 : expiryAtNanos == UNKNOWN ? Double.NaN
        : Math.max(0, ms(expiryAtNanos - lastOld.atNanos()));
    return new Trial(scenario, number, oldWorker, oldToken, firstNew.worker(), firstNew.token(),
        gap, bound, attempts, attempts - accepted, accepted, "");
  }

  /**
   * Tokens under which the resource accepted writes from more than one worker: the store granted
   * one token twice, so the fence cannot tell the holders apart (a safety violation).
   */
  static List<String> sharedTokens(List<WriteEvent> events) {
    Map<Long, TreeSet<String>> owners = new HashMap<>();
    for (WriteEvent e : events) {
      if (e.accepted()) {
        owners.computeIfAbsent(e.token(), t -> new TreeSet<>()).add(e.worker());
      }
    }
    List<String> out = new ArrayList<>();
    owners.entrySet().stream().filter(en -> en.getValue().size() > 1)
        .sorted(Map.Entry.comparingByKey())
        .forEach(en -> out.add("token " + en.getKey() + " accepted from workers " + en.getValue()));
    return out;
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }
}
