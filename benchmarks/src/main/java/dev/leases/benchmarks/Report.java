package dev.leases.benchmarks;

import dev.leases.benchmarks.GapAnalysis.Trial;
import dev.leases.benchmarks.RunResult.BackendResult;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/** Renders a {@link RunResult}: the console tables, and report.md, report.json and failover.svg. */
final class Report {

  private Report() {}

  // ---------------------------------------------------------------- tables

  static TextTable failoverTable(RunResult run) {
    TextTable t = new TextTable("backend", "scenario", "ttl", "trials", "gap p50", "gap p95",
        "gap max", "bound p50", "gap-bound p50", "stale attempted", "rejected", "ACCEPTED");
    for (BackendResult b : run.backends) {
      if (b.failover != null) {
        failoverRows(t, b.name, b.failover, run.options.scenarios, true);
      }
      for (Peers.Result p : b.peers) {
        failoverRows(t, p.label(b.name), p.failover(), run.options.scenarios, false);
      }
    }
    return t;
  }

  /**
   * The targets for acquire and renewal p50 over the store's plain write p50 ("many leases
   * per process"): 1.2x on PostgreSQL and Redis, 1.5x on etcd and Consul; none for other backends.
   */
  static final Map<String, Double> LATENCY_TARGETS = Map.of("postgres", 1.2, "redis", 1.2,
      "etcd", 1.5, "consul", 1.5);

  /** The calls the targets judge: both acquires (of a new name and of a released one), renewal. */
  private static final Set<String> TARGETED_CALLS =
      Set.of(Latency.FRESH, Latency.RENEW, Latency.TAKEOVER);

  /** The target ratio for {@code op} on {@code backend}, or NaN if the issue sets none. */
  static double latencyTarget(String backend, String op) {
    return TARGETED_CALLS.contains(op) ? LATENCY_TARGETS.getOrDefault(backend, Double.NaN)
        : Double.NaN;
  }

  /** One row per scenario; {@code fenced} false: accepted stale writes are figures, not violations. */
  private static void failoverRows(TextTable t, String label, Failover.Result f,
      List<String> scenarios, boolean fenced) {
    for (String scenario : scenarios) {
      List<Trial> ts = trials(f, scenario);
      if (ts.isEmpty()) {
        continue;
      }
      Stats gap = Stats.of(ts.stream().mapToDouble(Trial::gapMs).filter(d -> !Double.isNaN(d))
          .toArray());
      Stats bound = Stats.of(ts.stream().mapToDouble(Trial::boundMs)
          .filter(d -> !Double.isNaN(d)).toArray());
      Stats excess = Stats.of(ts.stream().mapToDouble(Trial::excessMs)
          .filter(d -> !Double.isNaN(d)).toArray());
      int attempted = ts.stream().mapToInt(Trial::staleAttempts).sum();
      int rejected = ts.stream().mapToInt(Trial::staleRejected).sum();
      int accepted = ts.stream().mapToInt(Trial::staleAccepted).sum();
      long failed = ts.stream().filter(x -> Double.isNaN(x.gapMs())).count();
      t.row(label, scenario, Failover.ms(f.ttl().toMillis()),
          ts.size() + (failed > 0 ? " (" + failed + " failed)" : ""),
          Failover.ms(gap.p50()), Failover.ms(gap.p95()), Failover.ms(gap.max()),
          Failover.ms(bound.p50()), signedMs(excess.p50()), attempted, rejected,
          accepted == 0 || !fenced ? Integer.toString(accepted) : accepted + " VIOLATION");
    }
  }

  static TextTable latencyTable(RunResult run) {
    TextTable t = new TextTable("backend", "call", "p50", "p99", "p50 / plain p50", "target");
    for (BackendResult b : run.backends) {
      if (b.latency == null) {
        continue;
      }
      Map<String, double[]> m = b.latency.micros();
      double plain = m.containsKey(Latency.PLAIN) ? Stats.of(m.get(Latency.PLAIN)).p50() : Double.NaN;
      m.forEach((op, samples) -> {
        Stats s = Stats.of(samples);
        double target = latencyTarget(b.name, op);
        String verdict = "";
        if (!Double.isNaN(target)) {
          double r = s.p50() / plain;
          verdict = String.format("<= %.1fx: ", target) + (Double.isNaN(r) ? "n/a"
              : r <= target ? "met" : "MISSED");
        }
        t.row(b.name, op, us(s.p50()), us(s.p99()),
            op.equals(Latency.PLAIN) ? "1 (baseline)" : ratio(s.p50(), plain), verdict);
      });
    }
    return t;
  }

  static TextTable scaleTable(RunResult run) {
    TextTable t = new TextTable("backend", "leases", "ttl (renew every)", "batch",
        "acquire round", "renew round p50 / max", "store calls / round", "threads (+ during)",
        "leases-* threads", "all held", "late rounds");
    for (BackendResult b : run.backends) {
      for (Scale.Result s : b.scale) {
        Stats r = Stats.of(s.renewRoundMs());
        t.row(b.name, String.format("%,d", s.leases()), Failover.ms(s.ttl().toMillis()) + " ("
            + Failover.ms(s.renewInterval().toMillis()) + ")", s.batch(),
            acquireRound(s), Failover.ms(r.p50()) + " / " + Failover.ms(r.max()),
            s.callsPerRound(), s.threadsPeak() + " (+" + s.threadsDelta() + ")",
            s.libraryThreads(), held(s), s.late());
      }
    }
    return t;
  }

  /**
   * The first round's time from {@code start()}, or that it did not complete within the group's
   * bound (the group gave up on it: its answers came too late or never).
   */
  static String acquireRound(Scale.Result s) {
    return s.acquireCompleted() ? Failover.ms(s.acquireMs())
        : "did not complete within " + Failover.ms(s.acquireBound().toMillis());
  }

  /** "yes", or "NO" with how many names were lost and why the part stopped short. */
  static String held(Scale.Result s) {
    if (s.allHeld()) {
      return "yes";
    }
    return "NO (" + s.lost() + " lost" + (s.note().isEmpty() ? "" : "; " + s.note()) + ")";
  }

  /** One line per backend: what its plain write is. */
  private static String plainWrites(RunResult run, String bullet) {
    StringBuilder sb = new StringBuilder();
    for (BackendResult b : run.backends) {
      if (b.latency != null) {
        sb.append(bullet).append("plain write on ").append(b.name).append(": ")
            .append(b.latency.plainWhat() == null ? "none registered" : b.latency.plainWhat())
            .append('\n');
      }
    }
    return sb.toString();
  }

  private static List<Trial> trials(Failover.Result f, String scenario) {
    return f.trials().stream().filter(x -> x.scenario().equals(scenario)).toList();
  }

  static String us(double micros) {
    if (Double.isNaN(micros)) {
      return "n/a";
    }
    if (micros >= 1000) {
      return String.format("%.2f ms", micros / 1000);
    }
    return micros >= 10 ? String.format("%.0f µs", micros) : String.format("%.2f µs", micros);
  }

  /** A duration in whole seconds when it is one, else in milliseconds: "20 s", "2500 ms". */
  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  static String ratio(double a, double b) {
    if (Double.isNaN(a) || Double.isNaN(b) || b <= 0) {
      return "n/a";
    }
    return String.format(a / b >= 10 ? "%.0fx" : "%.1fx", a / b);
  }

  private static String signedMs(double v) {
    return Double.isNaN(v) ? "n/a" : (v >= 0 ? "+" : "-") + Failover.ms(Math.abs(v));
  }

  // ---------------------------------------------------------------- console and Markdown

  static final String FAILOVER_NOTE = "gap = the old leader's last accepted write -> the new"
      + " leader's first accepted write (one clock: the resource's); bound = the least possible"
      + " gap, from that last write to the lease's expiry as the store reported it right after the"
      + " fault (0 for a clean close, which releases); stale = writes the old leader attempted after"
      + " the new leader's first write (only a paused leader comes back to try).";

  static String console(RunResult run) {
    StringBuilder sb = new StringBuilder();
    sb.append(header(run)).append('\n');
    TextTable f = failoverTable(run);
    if (!f.isEmpty()) {
      sb.append("\nFAILOVER (").append(run.options.peers).append(" peer JVMs, writes every ~")
          .append(run.options.workMs).append(" ms, pause = SIGSTOP for 2 x TTL)\n")
          .append(f.text()).append(wrap(FAILOVER_NOTE)).append(peersNote(run, "")).append('\n');
    }
    TextTable l = latencyTable(run);
    if (!l.isEmpty()) {
      sb.append("\nLATENCY (one thread, ").append(run.options.latencySamples)
          .append(" samples per call, in the harness JVM, each run of calls on a connection after"
              + " an untimed call on it)\n").append(l.text())
          .append(plainWrites(run, "")).append('\n');
    }
    TextTable s = scaleTable(run);
    if (!s.isEmpty()) {
      sb.append("\nSCALE (one LeaseGroup per row, its renewal every TTL/3; a batch call counts as one"
          + " store call)\n").append(s.text());
    }
    sb.append(footer(run));
    return sb.toString();
  }

  private static String header(RunResult run) {
    StringBuilder sb = new StringBuilder("leases benchmark ")
        .append(run.started.truncatedTo(java.time.temporal.ChronoUnit.SECONDS))
        .append(String.format(" (%.0f s)", run.wallSeconds)).append(" on ").append(machineLine());
    for (BackendResult b : run.backends) {
      sb.append("\n  ").append(b.name).append(": ").append(b.description);
    }
    return sb.toString();
  }

  private static String footer(RunResult run) {
    StringBuilder sb = new StringBuilder();
    for (RunResult.Skipped s : run.skipped) {
      sb.append("\nskipped ").append(s.name()).append(": ").append(s.how());
    }
    for (BackendResult b : run.backends) {
      for (String e : b.errors) {
        sb.append("\nERROR ").append(b.name).append(": ").append(e);
      }
    }
    if (!run.violations.isEmpty()) {
      sb.append("\n\n!!! SAFETY VIOLATIONS: ").append(run.violations.size()).append(" !!!");
      run.violations.forEach(v -> sb.append("\n!!! ").append(v));
    } else {
      sb.append("\n\nstale writes accepted: 0; tokens shared by two holders: 0");
    }
    return sb.append('\n').toString();
  }

  private static String wrap(String s) {
    StringBuilder sb = new StringBuilder();
    int col = 0;
    for (String w : s.split(" ")) {
      if (col + w.length() > 100) {
        sb.append('\n');
        col = 0;
      }
      sb.append(col == 0 ? "" : " ").append(w);
      col += w.length() + 1;
    }
    return sb.append('\n').toString();
  }

  /** The peers' note and their TTL notes, when any peer ran; else "". */
  private static String peersNote(RunResult run, String gap) {
    List<String> notes = new ArrayList<>();
    for (BackendResult b : run.backends) {
      for (Peers.Result p : b.peers) {
        notes.add(p.label(b.name) + ": " + p.mechanism().how()
            + (p.note().isEmpty() ? "" : "; " + p.note()));
      }
    }
    if (notes.isEmpty()) {
      return "";
    }
    StringBuilder sb = new StringBuilder(gap.isEmpty() ? wrap(Peers.NOTE) : Peers.NOTE + "\n\n");
    notes.forEach(n -> sb.append(gap.isEmpty() ? wrap("- " + n) : "- " + n + "\n"));
    return sb.append(gap).toString();
  }

  static String markdown(RunResult run) {
    StringBuilder sb = new StringBuilder("# leases benchmark\n\n");
    sb.append("Run ").append(run.started.truncatedTo(java.time.temporal.ChronoUnit.SECONDS)).append(String.format(", %.0f s, ", run.wallSeconds))
        .append("on ").append(machineLine()).append(", library ").append(libraryVersion())
        .append(".\n\n");
    for (BackendResult b : run.backends) {
      sb.append("- **").append(b.name).append("**: ").append(b.description).append('\n');
    }
    TextTable f = failoverTable(run);
    if (!f.isEmpty()) {
      sb.append("\n## Failover\n\n").append(run.options.peers).append(" peers, each its own JVM"
          + " running a `LeaderLoop`; the leader does units of work (fenced write, ")
          .append(run.options.workMs).append(" ms, fenced write with the same token). Scenarios:"
          + " clean = the leader closes its loop (releases); crash = `SIGKILL`; pause = `SIGSTOP`"
          + " for 2 × TTL, then `SIGCONT`.\n\n").append(f.markdown()).append('\n')
          .append(FAILOVER_NOTE).append("\n\n").append(peersNote(run, "\n"))
          .append("![failover gaps](failover.svg)\n");
    }
    TextTable l = latencyTable(run);
    if (!l.isEmpty()) {
      sb.append("\n## Latency\n\nOne thread in the harness JVM, ").append(run.options.latencySamples)
          .append(" samples per call after at least ").append(run.options.latencyWarmup)
          .append(" warm-up rounds, more (up to 5,000 or ")
          .append(seconds(run.options.latencyWarmupTime))
          .append(") so that the JIT has compiled the code (").append(warmups(run))
          .append("); each sample: fresh acquire (a name the store has never seen), renewal, a second holder's contended miss, release, the second holder's"
          + " takeover acquire (then its release, untimed), then the store's plain write. *target*:"
          + " the p50 ratio the project aims at for acquires and renewal (1.2x the plain write on"
          + " PostgreSQL and Redis, 1.5x on etcd and Consul).\n\n")
          .append(l.markdown()).append('\n').append(plainWrites(run, "- ")).append('\n');
    }
    TextTable s = scaleTable(run);
    if (!s.isEmpty()) {
      sb.append("\n## Scale\n\nOne process holds N leases in one `LeaseGroup` (TTL ")
          .append(Failover.ms(run.options.scaleTtl.toMillis())).append(", raised to a store's"
          + " minimum): the group acquires them (*acquire round*, from `start()`; \"did not"
          + " complete\" when a batch call of it outlasted the group's bound on a call, TTL/3, so"
          + " the group heard none of its grants), then renews them every TTL/3 on the library's"
          + " shared threads with batch calls of at most 10,000 names, for ")
          .append(run.options.scaleRounds).append(" rounds. A round is timed from its first batch"
          + " call to its last answer; *store calls / round* counts `LeaseStore` calls (a batch is"
          + " one, whether the store answers it natively or with the SPI's one call per name:"
          + " *batch*); *threads* = the JVM's live threads at their peak while the group ran, and"
          + " how many more than just before it was built; *all held* = every name acquired once and"
          + " kept with that token until the close (no loss, no new token); *late rounds* = rounds"
          + " longer than TTL/3.\n\n").append(s.markdown());
    }
    sb.append("\n## Notes\n");
    for (RunResult.Skipped sk : run.skipped) {
      sb.append("\n- skipped **").append(sk.name()).append("**: ").append(sk.how());
    }
    for (BackendResult b : run.backends) {
      for (String e : b.errors) {
        sb.append("\n- ERROR ").append(b.name).append(": ").append(e);
      }
    }
    if (run.violations.isEmpty()) {
      sb.append("\n- Stale writes accepted: 0. Tokens shared by two holders: 0.");
    } else {
      sb.append("\n- **SAFETY VIOLATIONS**:");
      run.violations.forEach(v -> sb.append("\n  - ").append(v));
    }
    return sb.append("\n- Raw samples: `report.json`.\n").toString();
  }

  // ---------------------------------------------------------------- JSON

  static String json(RunResult run) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("tool", "leases-benchmarks");
    root.put("library_version", libraryVersion());
    root.put("run_id", run.runId);
    root.put("started", run.started.toString());
    root.put("wall_seconds", run.wallSeconds);
    root.put("machine", machine());
    root.put("jvm", Map.of("version", System.getProperty("java.version"),
        "vendor", System.getProperty("java.vendor"), "vm", System.getProperty("java.vm.name")));
    BenchOptions o = run.options;
    Map<String, Object> opts = new LinkedHashMap<>();
    opts.put("backends", o.backends);
    opts.put("parts", List.copyOf(new java.util.TreeSet<>(o.parts)));
    opts.put("scenarios", o.scenarios);
    opts.put("trials", o.trials);
    opts.put("ttl_ms", o.ttlMs);
    opts.put("work_ms", o.workMs);
    opts.put("peers", o.peers);
    opts.put("peer_mechanisms", o.peerMechanisms.stream().map(PeerMechanism::id).toList());
    opts.put("latency_samples", o.latencySamples);
    opts.put("latency_warmup", o.latencyWarmup);
    opts.put("latency_warmup_ms", o.latencyWarmupTime.toMillis());
    opts.put("scale", o.scale);
    opts.put("scale_rounds", o.scaleRounds);
    opts.put("scale_ttl_ms", o.scaleTtl.toMillis());
    root.put("options", opts);
    List<Object> backends = new ArrayList<>();
    for (BackendResult b : run.backends) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", b.name);
      m.put("description", b.description);
      m.put("facts", b.facts);
      m.put("failover", b.failover == null ? null : failoverJson(b.failover, o));
      m.put("peers", b.peers.stream().map(p -> Peers.json(p, failoverJson(p.failover(), o))).toList());
      m.put("latency", b.latency == null ? null : latencyJson(b.name, b.latency));
      List<Object> scale = new ArrayList<>();
      for (Scale.Result s : b.scale) {
        Map<String, Object> sm = new LinkedHashMap<>();
        sm.put("leases", s.leases());
        sm.put("ttl_ms", s.ttl().toMillis());
        sm.put("renew_interval_ms", s.renewInterval().toMillis());
        sm.put("batch", s.batch());
        sm.put("acquire_round_ms", s.acquireMs());
        sm.put("acquire_round_completed", s.acquireCompleted());
        sm.put("acquire_round_bound_ms", s.acquireBound().toMillis());
        sm.put("renew_round_ms", s.renewRoundMs());
        Stats rs = Stats.of(s.renewRoundMs());
        sm.put("renew_round_p50_ms", rs.p50());
        sm.put("renew_round_max_ms", rs.max());
        sm.put("store_calls_per_round", s.callsPerRound());
        sm.put("threads_before", s.threadsBefore());
        sm.put("threads_peak", s.threadsPeak());
        sm.put("threads_delta", s.threadsDelta());
        sm.put("library_threads", s.libraryThreads());
        sm.put("new_threads", s.newThreads());
        sm.put("lost", s.lost());
        sm.put("all_held", s.allHeld());
        sm.put("late_rounds", s.late());
        sm.put("note", s.note());
        scale.add(sm);
      }
      m.put("scale", scale);
      m.put("errors", b.errors);
      backends.add(m);
    }
    root.put("backends", backends);
    root.put("peer_libraries", Peers.librariesJson(run));
    List<Object> skipped = new ArrayList<>();
    run.skipped.forEach(s -> skipped.add(Map.of("name", s.name(), "how_to_include", s.how())));
    root.put("skipped", skipped);
    root.put("safety_violations", run.violations);
    return Json.write(root);
  }

  private static Map<String, Object> failoverJson(Failover.Result f, BenchOptions o) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("ttl_ms", f.ttl().toMillis());
    Map<String, Object> summary = new LinkedHashMap<>();
    for (String scenario : o.scenarios) {
      List<Trial> ts = trials(f, scenario);
      if (ts.isEmpty()) {
        continue;
      }
      Stats gap = Stats.of(ts.stream().mapToDouble(Trial::gapMs).filter(d -> !Double.isNaN(d))
          .toArray());
      Stats bound = Stats.of(ts.stream().mapToDouble(Trial::boundMs).filter(d -> !Double.isNaN(d))
          .toArray());
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("trials", ts.size());
      s.put("gap_ms", statsJson(gap));
      s.put("bound_ms", statsJson(bound));
      s.put("stale_attempted", ts.stream().mapToInt(Trial::staleAttempts).sum());
      s.put("stale_rejected", ts.stream().mapToInt(Trial::staleRejected).sum());
      s.put("stale_accepted", ts.stream().mapToInt(Trial::staleAccepted).sum());
      summary.put(scenario, s);
    }
    m.put("summary", summary);
    List<Object> trials = new ArrayList<>();
    for (Trial t : f.trials()) {
      Map<String, Object> tm = new LinkedHashMap<>();
      tm.put("scenario", t.scenario());
      tm.put("trial", t.number());
      tm.put("old_worker", t.oldWorker());
      tm.put("old_token", t.oldToken());
      tm.put("new_worker", t.newWorker());
      tm.put("new_token", t.newToken());
      tm.put("gap_ms", t.gapMs());
      tm.put("bound_ms", t.boundMs());
      tm.put("stale_attempted", t.staleAttempts());
      tm.put("stale_rejected", t.staleRejected());
      tm.put("stale_accepted", t.staleAccepted());
      tm.put("note", t.note());
      trials.add(tm);
    }
    m.put("trials", trials);
    return m;
  }

  /** The warm-up rounds each backend ran, e.g. {@code "postgres 5000, redis 4120"}. */
  static String warmups(RunResult run) {
    List<String> parts = new ArrayList<>();
    for (BackendResult b : run.backends) {
      if (b.latency != null) {
        parts.add(b.name + " " + b.latency.warmupRounds());
      }
    }
    return String.join(", ", parts);
  }

  private static Map<String, Object> latencyJson(String backend, Latency.Result l) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("ttl_ms", l.ttl().toMillis());
    m.put("warmup_rounds", l.warmupRounds());
    m.put("plain_write", l.plainWhat());
    double plain = l.micros().containsKey(Latency.PLAIN)
        ? Stats.of(l.micros().get(Latency.PLAIN)).p50() : Double.NaN;
    Map<String, Object> summary = new LinkedHashMap<>();
    Map<String, Object> samples = new LinkedHashMap<>();
    l.micros().forEach((op, v) -> {
      Stats s = Stats.of(v);
      Map<String, Object> sm = new LinkedHashMap<>();
      sm.put("p50_us", s.p50());
      sm.put("p99_us", s.p99());
      sm.put("max_us", s.max());
      sm.put("p50_over_plain_p50", plain > 0 ? s.p50() / plain : null);
      double target = latencyTarget(backend, op);
      sm.put("target_p50_over_plain_p50", Double.isNaN(target) ? null : target);
      sm.put("meets_target", Double.isNaN(target) || !(plain > 0) ? null
          : s.p50() / plain <= target);
      summary.put(op, sm);
      samples.put(op, Arrays.stream(v).map(x -> Math.round(x * 100) / 100.0).boxed().toList());
    });
    m.put("summary", summary);
    m.put("samples_us", samples);
    return m;
  }

  private static Map<String, Object> statsJson(Stats s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("p50", s.p50());
    m.put("p95", s.p95());
    m.put("max", s.max());
    return m;
  }

  // ---------------------------------------------------------------- machine and versions

  static Map<String, Object> machine() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("cores", Runtime.getRuntime().availableProcessors());
    m.put("memory_bytes", totalMemory());
    m.put("cpu", cpuModel());
    m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    m.put("arch", System.getProperty("os.arch"));
    m.put("distribution", distribution());
    return m;
  }

  static String machineLine() {
    long mem = totalMemory();
    return Runtime.getRuntime().availableProcessors() + " cores, "
        + (mem > 0 ? String.format("%.0f GiB", mem / (1024.0 * 1024 * 1024)) : "? GiB")
        + ", " + distribution() + ", Java " + System.getProperty("java.version");
  }

  private static long totalMemory() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getTotalMemorySize();
    }
    return -1;
  }

  private static String cpuModel() {
    try {
      return Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
          .filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).trim())
          .findFirst().orElse("unknown");
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static String distribution() {
    try {
      return Files.readAllLines(Path.of("/etc/os-release")).stream()
          .filter(l -> l.startsWith("PRETTY_NAME=")).map(l -> l.substring(12).replace("\"", ""))
          .findFirst().orElse(System.getProperty("os.name"));
    } catch (IOException | RuntimeException e) {
      return System.getProperty("os.name");
    }
  }

  static String libraryVersion() {
    try (InputStream in = Report.class.getResourceAsStream("/leases-benchmarks.properties")) {
      Properties p = new Properties();
      if (in != null) {
        p.load(in);
      }
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      return "unknown";
    }
  }

  // ---------------------------------------------------------------- files

  /** Writes report.md, report.json and failover.svg into {@code dir}; returns the paths. */
  static List<Path> write(RunResult run, Path dir) throws IOException {
    Files.createDirectories(dir);
    Path md = Files.writeString(dir.resolve("report.md"), markdown(run));
    Path json = Files.writeString(dir.resolve("report.json"), json(run));
    Path svg = Files.writeString(dir.resolve("failover.svg"), FailoverChart.svg(run));
    return List.of(md, json, svg);
  }
}
