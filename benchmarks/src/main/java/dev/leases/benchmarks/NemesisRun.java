package dev.leases.benchmarks;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import dev.leases.benchmarks.NemesisChecker.Fault;
import dev.leases.benchmarks.NemesisChecker.Grant;
import dev.leases.benchmarks.NemesisSchedule.FaultType;
import dev.leases.benchmarks.NemesisSchedule.Step;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import dev.leases.tck.servers.TcpProxy;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The nemesis on one backend: worker JVMs ({@link FailoverWorkerMain} with grant reports), each
 * reaching the store through its own {@link TcpProxy} and running under libfaketime, a
 * {@link FenceServer}, a {@link GrantLog}, and {@code --lanes} fault lanes running at once until
 * the changes are seen or the time cap. Then {@link NemesisChecker} judges the history.
 *
 * <p>Each lane follows its own seeded {@link NemesisSchedule}: it claims a worker (the newest
 * leader when the step says so and no other lane holds it, else another fitting worker), injects
 * the fault, waits for the resource to accept a write after the fault's end, and keeps a short
 * quiet gap. Lanes never hurt the same worker at once; store faults run one at a time. So faults
 * overlap — a second lane freezes the worker that took over from the first lane's victim — which
 * both randomises the history and keeps the lease changing hands. A killed or restarted worker is
 * replaced in the background, so a lane does not wait for a JVM to start.
 */
final class NemesisRun {

  /** What happened; {@code problems} are measurement failures (not safety violations). */
  record Outcome(NemesisChecker.Result check, Map<String, Integer> faultsByType, int faults,
      List<String> problems, long elapsedNanos) {}

  private static final Pattern HOST_PORT = Pattern.compile("(127\\.0\\.0\\.1|localhost):(\\d+)");

  private final StoreFaults.Setup setup;
  private final Backend backend;
  private final NemesisOptions o;
  private final Duration ttl;
  private final Path logDir;
  private final Path faketime;
  private final Progress progress;
  private final String lease;
  // guarded by this
  private final Map<String, Worker> workers = new LinkedHashMap<>();
  private final Set<String> busy = new HashSet<>();
  private final List<Fault> faults = new ArrayList<>();
  private final Map<String, Integer> counts = new TreeMap<>();
  private final List<String> problems = new ArrayList<>();
  private int nextWorker = 1;
  // the rest
  private final ReentrantLock storeLock = new ReentrantLock();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean stopping;
  private ExecutorService respawner;
  private FenceServer fence;
  private GrantLog grants;

  /** One worker JVM and what the nemesis keeps about it. */
  private static final class Worker {
    final String id;
    final boolean wallOnly;
    final Path clockFile;
    final List<TcpProxy> proxies;
    WorkerProcess process;
    volatile boolean ready;
    long offsetMs; // only the lane that holds the worker touches it

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

  /** @param faketime libfaketime, or null when no clock fault is scheduled */
  NemesisRun(StoreFaults.Setup setup, NemesisOptions o, Duration ttl, Path logDir, Path faketime,
      Progress progress, String runId) {
    this.setup = setup;
    this.backend = setup.backend;
    this.o = o;
    this.ttl = ttl;
    this.logDir = logDir;
    this.faketime = faketime;
    this.progress = progress;
    this.lease = "nemesis-" + runId;
  }

  /** The fault types this run can inject: those asked for that this backend and machine support. */
  List<FaultType> types() {
    return o.faults.stream().filter(t -> t != FaultType.STORE || !setup.faults.isEmpty())
        .filter(t -> (t != FaultType.SNAPSHOT && t != FaultType.CLOCK_STEP) || faketime != null)
        .toList();
  }

  Outcome run() throws Exception {
    long capNanos = Duration.ofSeconds(o.capSeconds(ttl.toMillis())).toNanos();
    long started = System.nanoTime();
    long elapsed;
    respawner = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "nemesis-respawn");
      t.setDaemon(true);
      return t;
    });
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
        long firstChange = System.nanoTime();
        List<Thread> lanes = new ArrayList<>();
        for (int i = 0; i < o.lanes; i++) {
          int lane = i;
          Thread t = new Thread(() -> lane(lane), "nemesis-lane-" + lane);
          t.setDaemon(true);
          t.start();
          lanes.add(t);
        }
        while (!stopping) {
          if (grants.changes() >= o.changes || failure.get() != null) {
            break;
          }
          if (System.nanoTime() - started > capNanos) {
            String msg = "time cap of " + o.capSeconds(ttl.toMillis()) + " s hit after "
                + grants.changes() + " of " + o.changes + " changes";
            progress.say("%s · %s", backend.name(), msg);
            if (o.maxSeconds == 0) {
              problem(msg);
            }
            break;
          }
          Thread.sleep(50);
        }
        stopping = true;
        elapsed = System.nanoTime() - firstChange;
        for (Thread t : lanes) {
          t.join(recoveryWait().plusSeconds(60).toMillis());
          if (t.isAlive()) {
            problem(t.getName() + " did not finish its fault within " + recoveryWait()
                .plusSeconds(60));
          }
        }
        respawner.shutdown();
        respawner.awaitTermination(90, TimeUnit.SECONDS);
        Throwable e = failure.get();
        if (e != null) {
          // a measurement failure, not a verdict: the history up to here is still checked
          problem("the run stopped after " + grants.changes() + " changes: a fault could not be"
              + " injected or undone (" + e + ")");
        }
        Thread.sleep(3 * o.workMs + 500); // writes in flight land in the history
      } finally {
        stopping = true;
        respawner.shutdownNow();
        synchronized (this) {
          workers.values().forEach(Worker::close);
        }
      }
      NemesisChecker.Result check = NemesisChecker.check(grants.grants(), fence.events(),
          faults());
      for (Fault u : check.unrecovered()) {
        problem("no accepted write after " + u.type() + " on " + u.target());
      }
      synchronized (this) {
        return new Outcome(check, new TreeMap<>(counts), faults.size(), List.copyOf(problems),
            elapsed);
      }
    }
  }

  /** One fault lane, until the run stops; a failure stops the run. */
  private void lane(int lane) {
    NemesisSchedule schedule = NemesisSchedule.lane(o.seed, lane, types(), ttl.toMillis());
    try {
      while (!stopping) {
        Step step = schedule.next();
        int from = fence.size();
        Fault fault = inject(step);
        if (fault == null) {
          Thread.sleep(20); // nothing fits now (every worker busy, or a store fault running)
          continue;
        }
        synchronized (this) {
          faults.add(fault);
          counts.merge(fault.type(), 1, Integer::sum);
        }
        WriteEvent next = fence.await(from, e -> e.accepted() && e.atNanos() >= fault.endNanos(),
            recoveryWait().toNanos());
        progress.say("%s · #%d.%d %s on %s for %d ms: %s; changes %d", backend.name(), lane,
            step.index(), fault.type(), fault.target(),
            (fault.endNanos() - fault.startNanos()) / 1_000_000,
            next == null ? "NO accepted write within " + recoveryWait().toSeconds() + " s"
                : "next accepted write " + (next.atNanos() - fault.endNanos()) / 1_000_000
                + " ms after, by " + next.worker() + " token " + next.token(), grants.changes());
        sleep(step.gapMs());
      }
    } catch (Throwable e) {
      failure.compareAndSet(null, e);
      stopping = true;
    }
  }

  private synchronized List<Fault> faults() {
    return List.copyOf(faults);
  }

  private synchronized void problem(String p) {
    problems.add(p);
  }

  private Duration recoveryWait() {
    return ttl.multipliedBy(5).plusSeconds(20);
  }

  // ------------------------------------------------------------------ workers

  /** Starts a worker JVM; it is not {@linkplain Worker#ready ready} (nor a target) until READY. */
  private synchronized Worker spawn() throws IOException {
    if (stopping) {
      return null;
    }
    int n = nextWorker++;
    String id = "w" + n;
    boolean wallOnly = n % 2 == 0; // odd workers can be restored from a snapshot, even ones stepped
    List<TcpProxy> proxies = new ArrayList<>();
    StoreRecipe recipe = proxied(setup.recipe(n), proxies);
    Path clock = logDir.resolve(backend.name() + "-" + id + ".faketime");
    Worker w = new Worker(id, wallOnly, clock, proxies);
    Map<String, String> env = Map.of();
    if (faketime != null) {
      Faketime.setOffset(clock, 0);
      env = Faketime.env(faketime, clock, wallOnly);
    }
    w.process = WorkerProcess.start(id, recipe, lease, ttl, fence.port(), o.workMs,
        logDir.resolve(backend.name() + "-" + id + ".log"),
        Map.of("history-port", Integer.toString(grants.port()),
            "rejected-pause-ms", Long.toString(o.workMs)), env);
    workers.put(id, w);
    return w;
  }

  private void awaitReady(Worker w) throws InterruptedException {
    if (w.process.awaitLine("READY", 0, Duration.ofSeconds(60)) == null) {
      throw new IllegalStateException("worker " + w.id + " did not start within 60 s; its output: "
          + w.process.transcript() + "; its log: " + logDir.resolve(backend.name() + "-" + w.id
          + ".log"));
    }
    w.ready = true;
  }

  /** Replaces a killed or restarted worker after {@code delayMs}, without holding up a lane. */
  private void respawnLater(long delayMs) {
    respawner.execute(() -> {
      try {
        sleep(delayMs);
        Worker w = spawn();
        if (w != null) {
          awaitReady(w);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Throwable e) {
        if (!stopping) {
          failure.compareAndSet(null, e);
          stopping = true;
        }
      }
    });
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

  /**
   * Claims the worker for {@code step}: the newest leader if the step is on the leader and it fits;
   * if another lane holds the leader (or none is known yet), waits up to a TTL for the next one;
   * else the {@code pick}-th fitting worker. Null if none fits.
   */
  private Worker claim(Step step) throws InterruptedException {
    long deadline = System.nanoTime() + ttl.toNanos();
    while (true) {
      Grant top = grants.top();
      synchronized (this) {
        List<Worker> eligible = workers.values().stream()
            .filter(w -> w.ready && !busy.contains(w.id))
            .filter(w -> w.process.isAlive() && !w.process.isStopped())
            .toList();
        Worker leader = top == null ? null : workers.get(top.worker());
        Worker chosen = null;
        if (step.onLeader() && leader != null && eligible.contains(leader)) {
          chosen = leader;
        } else {
          boolean leaderMayFree = step.onLeader() && (leader == null || busy.contains(leader.id))
              && System.nanoTime() < deadline && !stopping;
          if (!leaderMayFree && !eligible.isEmpty()) {
            chosen = eligible.get(step.pick() % eligible.size());
          } else if (!leaderMayFree) {
            return null;
          }
        }
        if (chosen != null) {
          busy.add(chosen.id);
          return chosen;
        }
      }
      Thread.sleep(10);
    }
  }

  /**
   * A clock fault fits the worker's clock mode: a snapshot restore needs both clocks faked, a
   * wall-clock step the wall clock alone. Where a clock fault lands on a worker of the other mode
   * (the leader, when the step is on the leader), it becomes the other clock fault.
   */
  private static Step clockFaultFor(Step step, Worker w) {
    FaultType t = step.type();
    if (t == FaultType.SNAPSHOT && w.wallOnly) {
      t = FaultType.CLOCK_STEP;
    } else if (t == FaultType.CLOCK_STEP && !w.wallOnly) {
      t = FaultType.SNAPSHOT;
    } else {
      return step;
    }
    return new Step(step.index(), t, step.onLeader(), step.pick(), t == FaultType.SNAPSHOT
        ? step.snapshotMs() : 0, step.gapMs(), step.clockStepMs(), step.snapshotMs());
  }

  private synchronized void release(Worker w) {
    busy.remove(w.id);
  }

  // ------------------------------------------------------------------ faults

  /** Injects one step and returns it as a fault, or null if nothing fits it now. */
  private Fault inject(Step step) throws Exception {
    FaultType type = step.type();
    if (!type.onWorker()) {
      if (!storeLock.tryLock()) {
        return null;
      }
      try {
        StoreFaults.StoreFault f = setup.faults.get(step.pick() % setup.faults.size());
        long start = System.nanoTime();
        StoreFaults.Hit hit = f.inject(step.durationMs(), step.pick() / setup.faults.size());
        return new Fault(hit.label(), hit.target(), start, hit.endNanos());
      } finally {
        storeLock.unlock();
      }
    }
    Worker w = claim(step);
    if (w == null) {
      return null;
    }
    try {
      return inject(clockFaultFor(step, w), w);
    } finally {
      release(w);
    }
  }

  private Fault inject(Step step, Worker w) throws Exception {
    FaultType type = step.type();
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
          problem(w.id + " did not exit within 15 s of " + type.label);
        }
        synchronized (this) {
          workers.remove(w.id);
        }
        w.close();
        respawnLater(step.durationMs());
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
