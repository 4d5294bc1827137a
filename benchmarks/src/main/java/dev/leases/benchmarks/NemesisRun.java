package dev.leases.benchmarks;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import dev.leases.benchmarks.NemesisChecker.Fault;
import dev.leases.benchmarks.NemesisSchedule.FaultType;
import dev.leases.benchmarks.NemesisSchedule.Step;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import dev.leases.tck.servers.TcpProxy;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The nemesis on one backend: worker JVMs ({@link FailoverWorkerMain} with grant reports), each
 * reaching the store through its own {@link TcpProxy} and running under libfaketime, a
 * {@link FenceServer}, a {@link GrantLog}, and the faults of a {@link NemesisSchedule} one at a
 * time — each followed by a wait for the resource to accept a write again and a quiet gap — until
 * the changes are seen or the time cap. Then {@link NemesisChecker} judges the history.
 */
final class NemesisRun {

  /** What happened; {@code problems} are measurement failures (not safety violations). */
  record Outcome(NemesisChecker.Result check, Map<String, Integer> faultsByType, int faults,
      List<String> problems) {}

  /** A store-side fault the backend supports, or none. */
  interface StoreFault extends AutoCloseable {
    /** What it does, for the report. */
    String describe();

    /** Takes the store down for about {@code downtimeMs} and waits until it is back. */
    void inject(long downtimeMs) throws Exception;

    @Override
    void close();
  }

  private static final Pattern HOST_PORT = Pattern.compile("(127\\.0\\.0\\.1|localhost):(\\d+)");

  private final Backend backend;
  private final NemesisOptions o;
  private final Duration ttl;
  private final Path logDir;
  private final Path faketime;
  private final StoreFault storeFault;
  private final Progress progress;
  private final String lease;
  private final Map<String, Worker> workers = new LinkedHashMap<>();
  private final List<Fault> faults = new ArrayList<>();
  private final Map<String, Integer> counts = new TreeMap<>();
  private final List<String> problems = new ArrayList<>();
  private int nextWorker = 1;
  private FenceServer fence;
  private GrantLog grants;

  /** One worker JVM and what the nemesis keeps about it. */
  private static final class Worker {
    final String id;
    final boolean wallOnly;
    final Path clockFile;
    final List<TcpProxy> proxies;
    WorkerProcess process;
    long offsetMs;

    Worker(String id, boolean wallOnly, Path clockFile, List<TcpProxy> proxies) {
      this.id = id;
      this.wallOnly = wallOnly;
      this.clockFile = clockFile;
      this.proxies = proxies;
    }

    void close() {
      if (process != null) {
        process.close();
      }
      proxies.forEach(TcpProxy::close);
    }
  }

  /**
   * @param faketime libfaketime, or null when no clock fault is scheduled
   * @param storeFault the backend's store fault, or null
   */
  NemesisRun(Backend backend, NemesisOptions o, Duration ttl, Path logDir, Path faketime,
      StoreFault storeFault, Progress progress, String runId) {
    this.backend = backend;
    this.o = o;
    this.ttl = ttl;
    this.logDir = logDir;
    this.faketime = faketime;
    this.storeFault = storeFault;
    this.progress = progress;
    this.lease = "nemesis-" + runId;
  }

  /** The fault types this run can inject: those asked for that this backend and machine support. */
  List<FaultType> types() {
    return o.faults.stream().filter(t -> t != FaultType.STORE_RESTART || storeFault != null)
        .filter(t -> (t != FaultType.SNAPSHOT && t != FaultType.CLOCK_STEP) || faketime != null)
        .toList();
  }

  Outcome run() throws Exception {
    long capNanos = Duration.ofSeconds(o.capSeconds(ttl.toMillis())).toNanos();
    long started = System.nanoTime();
    try (FenceServer f = new FenceServer(lease); GrantLog g = new GrantLog()) {
      fence = f;
      grants = g;
      try {
        List<Worker> fresh = new ArrayList<>();
        for (int i = 0; i < o.workers; i++) {
          fresh.add(spawn());
        }
        for (Worker w : fresh) {
          awaitReady(w);
        }
        if (fence.await(0, WriteEvent::accepted, recoveryWait().toNanos()) == null) {
          throw new IllegalStateException("no worker wrote within " + recoveryWait()
              + " of starting; worker logs in " + logDir);
        }
        NemesisSchedule schedule = new NemesisSchedule(o.seed, types(), ttl.toMillis());
        while (grants.changes() < o.changes) {
          if (System.nanoTime() - started > capNanos) {
            String msg = "time cap of " + o.capSeconds(ttl.toMillis()) + " s hit after "
                + grants.changes() + " of " + o.changes + " changes";
            progress.say("%s · %s", backend.name(), msg);
            if (o.maxSeconds == 0) {
              problems.add(msg);
            }
            break;
          }
          Step step = schedule.next();
          Fault fault = inject(step);
          if (fault == null) {
            continue;
          }
          faults.add(fault);
          counts.merge(fault.type(), 1, Integer::sum);
          WriteEvent next = fence.await(0, e -> e.accepted() && e.atNanos() >= fault.endNanos(),
              recoveryWait().toNanos());
          progress.say("%s · #%d %s on %s for %d ms: %s; changes %d", backend.name(),
              step.index(), fault.type(), fault.target(),
              (fault.endNanos() - fault.startNanos()) / 1_000_000,
              next == null ? "NO accepted write within " + recoveryWait().toSeconds() + " s"
                  : "next accepted write " + (next.atNanos() - fault.endNanos()) / 1_000_000
                  + " ms after, by " + next.worker() + " token " + next.token(), grants.changes());
          Thread.sleep(step.gapMs());
        }
        Thread.sleep(3 * o.workMs + 500); // writes in flight land in the history
      } finally {
        workers.values().forEach(Worker::close);
      }
      NemesisChecker.Result check = NemesisChecker.check(grants.grants(), fence.events(), faults);
      for (Fault u : check.unrecovered()) {
        problems.add("no accepted write after " + u.type() + " on " + u.target());
      }
      return new Outcome(check, counts, faults.size(), problems);
    }
  }

  private Duration recoveryWait() {
    return ttl.multipliedBy(5).plusSeconds(20);
  }

  // ------------------------------------------------------------------ workers

  private Worker spawn() throws IOException {
    int n = nextWorker++;
    String id = "w" + n;
    boolean wallOnly = n % 2 == 0; // odd workers can be restored from a snapshot, even ones stepped
    List<TcpProxy> proxies = new ArrayList<>();
    StoreRecipe recipe = proxied(backend.recipe(), proxies);
    Path clock = logDir.resolve(backend.name() + "-" + id + ".faketime");
    Worker w = new Worker(id, wallOnly, clock, proxies);
    Map<String, String> env = Map.of();
    if (faketime != null) {
      Faketime.setOffset(clock, 0);
      env = Faketime.env(faketime, clock, wallOnly);
    }
    w.process = WorkerProcess.start(id, recipe, lease, ttl, fence.port(), o.workMs,
        logDir.resolve(backend.name() + "-" + id + ".log"),
        Map.of("history-port", Integer.toString(grants.port())), env);
    workers.put(id, w);
    return w;
  }

  private void awaitReady(Worker w) throws InterruptedException {
    if (w.process.awaitLine("READY", 0, Duration.ofSeconds(60)) == null) {
      throw new IllegalStateException("worker " + w.id + " did not start within 60 s; its output: "
          + w.process.transcript() + "; its log: " + logDir.resolve(backend.name() + "-" + w.id
          + ".log"));
    }
  }

  /**
   * The recipe with every loopback {@code host:port} (and a bare {@code port} setting, the
   * in-memory store's) pointed at a new proxy of its own.
   */
  static StoreRecipe proxied(StoreRecipe recipe, List<TcpProxy> proxies) throws IOException {
    Map<Integer, TcpProxy> byTarget = new LinkedHashMap<>();
    Map<String, String> settings = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : recipe.settings().entrySet()) {
      String v = e.getValue();
      if (recipe.factory() == RemoteLeaseStoreFactory.class && e.getKey().equals("port")) {
        settings.put(e.getKey(), Integer.toString(proxy(byTarget, Integer.parseInt(v)).port()));
        continue;
      }
      Matcher m = HOST_PORT.matcher(v);
      StringBuilder sb = new StringBuilder();
      while (m.find()) {
        int port = proxy(byTarget, Integer.parseInt(m.group(2))).port();
        m.appendReplacement(sb, m.group(1) + ":" + port);
      }
      m.appendTail(sb);
      settings.put(e.getKey(), sb.toString());
    }
    proxies.addAll(byTarget.values());
    return new StoreRecipe(recipe.factory(), settings);
  }

  private static TcpProxy proxy(Map<Integer, TcpProxy> byTarget, int target) throws IOException {
    TcpProxy p = byTarget.get(target);
    if (p == null) {
      p = new TcpProxy(target);
      byTarget.put(target, p);
    }
    return p;
  }

  private Worker target(Step step) {
    WriteEvent last = fence.last();
    Worker leader = last != null && last.accepted() ? workers.get(last.worker()) : null;
    List<Worker> eligible = workers.values().stream()
        .filter(w -> w.process.isAlive() && !w.process.isStopped())
        .filter(w -> step.type() != FaultType.SNAPSHOT || !w.wallOnly)
        .filter(w -> step.type() != FaultType.CLOCK_STEP || w.wallOnly)
        .toList();
    if (eligible.isEmpty()) {
      return null;
    }
    if (step.onLeader() && leader != null && eligible.contains(leader)) {
      return leader;
    }
    return eligible.get(step.pick() % eligible.size());
  }

  // ------------------------------------------------------------------ faults

  /** Injects one step and returns it as a fault, or null if no worker fits it. */
  private Fault inject(Step step) throws Exception {
    FaultType type = step.type();
    if (!type.onWorker()) {
      long start = System.nanoTime();
      storeFault.inject(step.durationMs());
      return new Fault(type.label, backend.name(), start, System.nanoTime());
    }
    Worker w = target(step);
    if (w == null) {
      return null;
    }
    WorkerProcess p = w.process;
    long start = System.nanoTime();
    switch (type) {
      case PAUSE_SHORT, PAUSE_LONG -> {
        p.signal("STOP");
        sleep(step.durationMs());
        p.signal("CONT");
      }
      case SNAPSHOT -> {
        p.signal("STOP");
        sleep(step.durationMs());
        // rewind both clocks by the time it was frozen, so that it resumes believing none passed
        long frozenMs = (System.nanoTime() - start) / 1_000_000;
        w.offsetMs -= frozenMs;
        Faketime.setOffset(w.clockFile, w.offsetMs);
        p.signal("CONT");
      }
      case CLOCK_STEP -> {
        w.offsetMs += step.clockStepMs();
        Faketime.setOffset(w.clockFile, w.offsetMs);
        return new Fault(type.label, w.id + " (wall " + Faketime.format(step.clockStepMs())
            + ")", start, start);
      }
      case NET_STALL -> {
        w.proxies.forEach(TcpProxy::stall);
        sleep(step.durationMs());
        w.proxies.forEach(TcpProxy::forward);
      }
      case NET_CUT -> {
        w.proxies.forEach(TcpProxy::cut);
        sleep(step.durationMs());
        w.proxies.forEach(TcpProxy::forward);
      }
      case KILL, RESTART -> {
        if (type == FaultType.KILL) {
          p.signal("KILL");
        } else {
          p.send("CLOSE");
        }
        long end = System.nanoTime();
        if (!p.waitForExit(Duration.ofSeconds(15))) {
          problems.add(w.id + " did not exit within 15 s of " + type.label);
        }
        w.close();
        workers.remove(w.id);
        sleep(step.durationMs());
        awaitReady(spawn());
        return new Fault(type.label, w.id, start, end);
      }
      default -> throw new IllegalStateException(type.toString());
    }
    return new Fault(type.label, w.id, start, System.nanoTime());
  }

  private static void sleep(long ms) throws InterruptedException {
    if (ms > 0) {
      Thread.sleep(ms);
    }
  }
}
