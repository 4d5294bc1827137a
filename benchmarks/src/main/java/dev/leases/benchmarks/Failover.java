package dev.leases.benchmarks;

import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.benchmarks.FenceServer.WriteEvent;
import dev.leases.benchmarks.GapAnalysis.Trial;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The failover benchmark on one backend: {@code peers} worker JVMs contend for one lease and the
 * leader does fenced units of work against a {@link FenceServer} in this JVM; each trial waits for
 * a steady leader, hurts it (clean close, SIGKILL or SIGSTOP for 2 × TTL, then SIGCONT), and reads
 * the gap, the bound and the stale writes off the resource's log. Dead peers are replaced between
 * trials, outside the measured window.
 *
 * <p>With a {@link PeerMechanism} the workers run that library's leader mechanism instead of ours
 * ({@link PeerWorker}), on the same store, schedule and analysis, against an
 * {@linkplain FenceServer#unfenced unfenced} resource; the bound is not known (n/a), their accepted
 * stale writes are figures, not violations of this library, and a paused peer that has not said it
 * lost leadership {@value #RETIRE_AFTER_S} s after {@code SIGCONT} is retired with {@code SIGKILL}
 * (it would otherwise write beside its successor for ever), so its count is per that window.
 */
final class Failover {

  record Result(Duration ttl, List<Trial> trials, List<String> violations) {}

  /** Seconds after SIGCONT a resumed peer gets to notice its loss before it is retired. */
  static final int RETIRE_AFTER_S = 5;

  private final Backend backend;
  private final PeerMechanism peer;
  private final BenchOptions o;
  private final Duration ttl;
  private final Path logDir;
  private final Progress progress;
  private final String lease;
  private final Map<String, WorkerProcess> workers = new LinkedHashMap<>();
  private int nextWorker = 1;

  Failover(Backend backend, BenchOptions o, Duration ttl, Path logDir, Progress progress,
      String runId) {
    this(backend, null, o, ttl, logDir, progress, runId);
  }

  /** The same benchmark with {@code peer}'s mechanism in the workers (null: ours). */
  Failover(Backend backend, PeerMechanism peer, BenchOptions o, Duration ttl, Path logDir,
      Progress progress, String runId) {
    this.backend = backend;
    this.peer = peer;
    this.o = o;
    this.ttl = ttl;
    this.logDir = logDir;
    this.progress = progress;
    this.lease = "bench-failover-" + runId + (peer == null ? "" : "-" + peer.id());
  }

  /** The row label: the backend, and the peer mechanism if any. */
  private String label() {
    return peer == null ? backend.name() : backend.name() + " · " + peer.id();
  }

  Result run() throws Exception {
    List<Trial> trials = new ArrayList<>();
    List<String> violations = new ArrayList<>();
    try (FenceServer fence = peer == null ? new FenceServer(lease) : FenceServer.unfenced(lease);
        LeaseStore probe = peer == null ? backend.openStore() : null) {
      try {
        for (String scenario : o.scenarios) {
          for (int n = 1; n <= o.trials; n++) {
            ensurePeers(fence);
            Trial t = trial(scenario, n, fence, probe);
            trials.add(t);
            progress.say("%s · failover %s %d/%d: gap %s (bound %s), stale attempted %d,"
                + " rejected %d%s%s", label(), scenario, n, o.trials, ms(t.gapMs()),
                ms(t.boundMs()), t.staleAttempts(), t.staleRejected(),
                t.staleAccepted() == 0 ? "" : peer != null ? ", accepted " + t.staleAccepted()
                    + " (unfenced)" : ", ACCEPTED " + t.staleAccepted() + " (SAFETY VIOLATION)",
                t.note().isEmpty() ? "" : " — " + t.note());
            if (t.staleAccepted() > 0 && peer == null) {
              violations.add(backend.name() + " " + scenario + " trial " + n + ": "
                  + t.staleAccepted() + " stale write(s) from " + t.oldWorker() + " (token "
                  + t.oldToken() + ") ACCEPTED after " + t.newWorker() + " wrote with token "
                  + t.newToken());
            }
          }
        }
      } finally {
        workers.values().forEach(WorkerProcess::close);
      }
      for (String shared : peer != null ? List.<String>of()
          : GapAnalysis.sharedTokens(fence.events())) {
        violations.add(backend.name() + ": " + shared);
      }
    }
    return new Result(ttl, trials, violations);
  }

  private void ensurePeers(FenceServer fence) throws Exception {
    workers.values().removeIf(w -> !w.isAlive());
    List<WorkerProcess> fresh = new ArrayList<>();
    while (workers.size() < o.peers) {
      String id = "w" + nextWorker++;
      WorkerProcess w = WorkerProcess.start(id, backend.recipe(), lease, ttl, fence.port(),
          o.workMs, log(id), peer == null ? Map.of() : Map.of("peer", peer.id()), Map.of());
      workers.put(id, w);
      fresh.add(w);
    }
    for (WorkerProcess w : fresh) {
      if (w.awaitLine("READY", 0, Duration.ofSeconds(60)) == null) {
        throw new IllegalStateException("worker " + w.id() + " did not start within 60 s; its"
            + " output: " + w.transcript() + "; its log: " + log(w.id()));
      }
    }
    if (!fresh.isEmpty()) {
      Thread.sleep(300); // let new followers make their first attempt and settle
    }
  }

  private Path log(String id) {
    return logDir.resolve(backend.name() + (peer == null ? "" : "-" + peer.id()) + "-" + id
        + ".log");
  }

  /** The worker that has written steadily under one token for the last few writes. */
  private WorkerProcess steadyLeader(FenceServer fence) throws InterruptedException {
    long end = System.nanoTime() + ttl.multipliedBy(5).plusSeconds(30).toNanos();
    while (System.nanoTime() < end) {
      List<WriteEvent> ev = fence.events();
      int n = ev.size();
      if (n >= 6) {
        WriteEvent last = ev.get(n - 1);
        boolean steady = System.nanoTime() - last.atNanos() < Duration.ofMillis(100 + o.workMs)
            .toNanos();
        for (int i = n - 6; i < n && steady; i++) {
          WriteEvent e = ev.get(i);
          steady = e.accepted() && e.worker().equals(last.worker()) && e.token() == last.token();
        }
        WorkerProcess w = workers.get(last.worker());
        if (steady && w != null && w.isAlive() && !w.isStopped()) {
          return w;
        }
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException(label() + ": no worker led steadily within "
        + ttl.multipliedBy(5).plusSeconds(30) + "; worker logs in " + logDir);
  }

  private Trial trial(String scenario, int n, FenceServer fence, LeaseStore probe)
      throws Exception {
    WorkerProcess old = steadyLeader(fence);
    if (scenario.equals("pause")) {
      // mid-unit, so that the resumed leader sends the end of its unit with its old token: the
      // first write of a unit was just accepted, then a random phase of the work
      WriteEvent begin = fence.await(fence.size(), e -> e.worker().equals(old.id()) && e.accepted()
          && e.begin(), ttl.multipliedBy(3).toNanos());
      if (begin == null) {
        throw new IllegalStateException(label() + ": the steady leader " + old.id() + " began no"
            + " unit within " + ttl.multipliedBy(3) + "; worker logs in " + logDir);
      }
      Thread.sleep(ThreadLocalRandom.current().nextLong(o.workMs / 2 + 1));
    } else {
      Thread.sleep(ThreadLocalRandom.current().nextLong(o.workMs + 1)); // random phase in the unit
    }
    long oldToken = fence.last().token();
    int from = fence.size();
    int oldLines = old.lineCount();
    long expiry = GapAnalysis.RELEASED;
    String retired = "";
    long faultAt = System.nanoTime();
    switch (scenario) {
      case "clean" -> old.send("CLOSE");
      case "crash" -> {
        old.signal("KILL");
        expiry = peer == null ? expiryAfterFault(probe, oldToken) : GapAnalysis.UNKNOWN;
      }
      case "pause" -> {
        old.signal("STOP");
        expiry = peer == null ? expiryAfterFault(probe, oldToken) : GapAnalysis.UNKNOWN;
      }
      default -> throw new IllegalArgumentException(scenario);
    }
    Duration wait = ttl.multipliedBy(3).plusSeconds(15);
    WriteEvent first = fence.await(from, e -> e.accepted() && !e.worker().equals(old.id())
        && e.token() > oldToken, wait.toNanos());
    switch (scenario) {
      case "clean" -> old.waitForExit(Duration.ofSeconds(10));
      case "crash" -> old.waitForExit(Duration.ofSeconds(10));
      default -> {
        long resumeAt = faultAt + ttl.multipliedBy(2).toNanos();
        long left = resumeAt - System.nanoTime();
        if (left > 0) {
          Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
        old.signal("CONT");
        boolean noticed = old.awaitLine("LOST ", oldLines, Duration.ofSeconds(RETIRE_AFTER_S))
            != null;
        Thread.sleep(3 * o.workMs + 100); // the unit it was frozen in ends with a write
        if (peer != null && !noticed) {
          old.signal("KILL");
          old.waitForExit(Duration.ofSeconds(10));
          retired = "still leading " + RETIRE_AFTER_S + " s after SIGCONT: retired (SIGKILL)";
        }
      }
    }
    Trial t = GapAnalysis.analyze(scenario, n, fence.events(), old.id(), oldToken, expiry);
    if (!retired.isEmpty()) {
      t = new Trial(t.scenario(), n, t.oldWorker(), t.oldToken(), t.newWorker(), t.newToken(),
          t.gapMs(), t.boundMs(), t.staleAttempts(), t.staleRejected(), t.staleAccepted(),
          t.note().isEmpty() ? retired : t.note() + "; " + retired);
    }
    if (first == null) {
      t = new Trial(t.scenario(), n, old.id(), oldToken, null, 0, Double.NaN, Double.NaN,
          t.staleAttempts(), t.staleRejected(), t.staleAccepted(),
          "no takeover within " + wait.toSeconds() + " s");
    }
    return t;
  }

  /**
   * When the store will consider the old tenure expired, on this JVM's clock: read twice after the
   * fault (a renewal already in flight at the fault may still land), each as the time the inspect
   * was sent plus the remaining time the store reported — an early estimate, so the bound is a
   * true lower bound. A store that reports remaining time in coarse steps (etcd: whole seconds,
   * rounded up) may overstate it by up to one step, so one step of its TTL granularity is taken
   * off. Falls back to now when the store no longer reports the old tenure as held.
   */
  private long expiryAfterFault(LeaseStore probe, long oldToken) throws InterruptedException {
    long best = System.nanoTime();
    long step = probe.ttlRange().granularity().toNanos();
    long coarse = step >= 1_000_000_000L ? step : 0;
    for (int i = 0; i < 2; i++) {
      if (i > 0) {
        Thread.sleep(50);
      }
      long sent = System.nanoTime();
      try {
        LeaseState s = probe.inspect(lease);
        if (s instanceof LeaseState.Held h && h.lastToken() == oldToken) {
          best = Math.max(best, sent + h.remaining().toNanos() - coarse);
        }
      } catch (RuntimeException e) {
        progress.say("%s · inspect after the fault failed: %s", label(), e);
      }
    }
    return best;
  }

  static String ms(double v) {
    if (Double.isNaN(v)) {
      return "n/a";
    }
    if (v >= 1000) {
      return String.format("%.2f s", v / 1000);
    }
    return v >= 10 || v == 0 ? String.format("%.0f ms", v) : String.format("%.1f ms", v);
  }
}
