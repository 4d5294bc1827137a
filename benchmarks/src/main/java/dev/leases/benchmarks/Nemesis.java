package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.benchmarks.NemesisSchedule.FaultType;
import dev.leases.tck.process.ChildJvm;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import java.util.stream.Collectors;

/** The {@code nemesis} command: checks libfaketime, runs {@link NemesisRun} per backend, reports. */
final class Nemesis {

  private Nemesis() {}

  static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
    NemesisOptions o;
    try {
      o = NemesisOptions.parse(args);
    } catch (IllegalArgumentException e) {
      err.println(e.getMessage() + "\n\n" + NemesisOptions.USAGE);
      return 2;
    }
    if (o.help) {
      out.println(NemesisOptions.USAGE);
      return 0;
    }
    List<Backends.Kind> chosen = new ArrayList<>();
    for (String name : o.stores.backends) {
      Backends.Kind k = Backends.find(name).orElse(null);
      String missing = k == null ? "unknown backend; known: " + String.join(", ",
          Backends.names()) : k.missing(o.stores);
      if (missing != null) {
        err.println("nemesis: cannot include " + name + ": " + missing);
        return 2;
      }
      if (!chosen.contains(k)) {
        chosen.add(k);
      }
    }
    String runId = Bench.runId();
    Path logs = Files.createDirectories(o.out != null ? o.out
        : Path.of("reports", "nemesis-" + runId));
    Progress progress = new Progress(err);
    out.println("nemesis: seed " + o.seed);
    Path faketime = null;
    if (o.faults.contains(FaultType.SNAPSHOT) || o.faults.contains(FaultType.CLOCK_STEP)) {
      faketime = Faketime.library().orElse(null);
      if (faketime == null) {
        err.println("nemesis: libfaketime is missing, needed for the snapshot and clock-step"
            + " faults: " + Faketime.INSTALL_HINT + " (or leave them out with --faults)");
        return 2;
      }
      String broken = probe(faketime, logs);
      if (broken != null) {
        err.println("nemesis: " + broken);
        return 3;
      }
      progress.say("libfaketime %s moves both clocks, and the wall clock alone when asked",
          faketime);
    }
    boolean violated = false;
    boolean failed = false;
    List<String> summaries = new ArrayList<>();
    for (Backends.Kind k : chosen) {
      progress.say("%s · starting", k.name());
      try (StoreFaults.Setup setup = StoreFaults.start(k, o.stores, logs)) {
        Backend backend = setup.backend;
        Duration ttl;
        try (LeaseStore s = backend.openStore()) {
          ttl = Bench.fit(Duration.ofMillis(o.ttlMs), s);
        }
        NemesisRun run = new NemesisRun(setup, o, ttl, logs, faketime, progress, runId);
        progress.say("%s · %s; ttl %d ms; %d workers; %d lanes; faults %s%s", k.name(),
            backend.description(), ttl.toMillis(), o.workers, o.lanes, run.types().stream()
                .map(t -> t.label).toList(), setup.faults.isEmpty() ? "" : "; store faults: "
                + setup.describeFaults());
        NemesisRun.Outcome r = run.run();
        NemesisChecker.Result c = r.check();
        out.println("nemesis: " + k.name() + " faults by type: " + (r.faultsByType().isEmpty()
            ? "none" : r.faultsByType().entrySet().stream().map(e -> e.getKey() + " "
            + e.getValue()).collect(Collectors.joining(", "))));
        c.violations().forEach(v -> out.println("nemesis: " + k.name() + " VIOLATION " + v));
        double seconds = r.elapsedNanos() / 1e9;
        out.println(String.format(Locale.ROOT, "nemesis: %s rate %.1f changes/min over %.0f s",
            k.name(), seconds > 0 ? c.changes() * 60 / seconds : 0, seconds));
        r.problems().forEach(p -> out.println("nemesis: " + k.name() + " FAILED " + p));
        String line = String.format(Locale.ROOT, "nemesis: %s changes %d faults %d accepted %d"
            + " rejected %d violations %d max-recovery %.3f", k.name(), c.changes(), r.faults(),
            c.accepted(), c.rejected(), c.violations().size(), c.maxRecoveryNanos() / 1e9);
        out.println(line);
        summaries.add(line);
        violated |= !c.violations().isEmpty();
        failed |= !r.problems().isEmpty();
      } catch (Exception e) {
        progress.say("%s · FAILED: %s", k.name(), e);
        out.println("nemesis: " + k.name() + " FAILED " + e);
        failed = true;
      }
    }
    progress.say("worker logs in %s", logs);
    return violated ? 1 : failed ? 3 : 0;
  }

  /**
   * Starts a probe JVM in each mode and moves its clock file a day ahead: null if both clocks
   * moved in the full mode and only the wall clock in the wall-only mode, else what went wrong.
   */
  static String probe(Path library, Path dir) throws Exception {
    for (boolean wallOnly : new boolean[] {false, true}) {
      Path file = dir.resolve("probe-" + (wallOnly ? "wall" : "both") + ".faketime");
      Faketime.setOffset(file, 0);
      try (ChildJvm probe = ChildJvm.start(ClockProbeMain.class, List.of(),
          dir.resolve("probe.log"), Faketime.env(library, file, wallOnly))) {
        if (probe.awaitLine("READY", 0, Duration.ofSeconds(60)).isEmpty()) {
          return "the clock probe JVM under libfaketime (" + library + ") did not start; its"
              + " output: " + probe.transcript() + "; log " + dir.resolve("probe.log");
        }
        long[] before = clocks(probe);
        long day = Duration.ofDays(1).toMillis();
        Faketime.setOffset(file, day);
        long[] after = clocks(probe);
        if (before == null || after == null) {
          return "the clock probe JVM under libfaketime (" + library + ", " + (wallOnly
              ? "wall clock only" : "both clocks") + ") did not answer within 10 s: its timed"
              + " waits may hang under this libfaketime; log " + dir.resolve("probe.log");
        }
        long wall = after[0] - before[0];
        long mono = after[1] - before[1];
        boolean wallOk = wall > day - 60_000 && wall < day + 60_000;
        boolean monoOk = wallOnly ? Math.abs(mono) < 60_000 : mono > day - 60_000
            && mono < day + 60_000;
        if (!wallOk || !monoOk) {
          return "libfaketime (" + library + ") did not take effect" + (wallOnly
              ? " with FAKETIME_DONT_FAKE_MONOTONIC=1" : "") + ": moving the offset by a day moved"
              + " System.currentTimeMillis by " + wall + " ms and System.nanoTime by " + mono
              + " ms (expected " + day + " and " + (wallOnly ? "~0" : day) + "). Check that the"
              + " library matches this JVM's architecture and that LD_PRELOAD is not stripped";
        }
      }
    }
    return null;
  }

  private static long[] clocks(ChildJvm probe) throws Exception {
    int from = probe.lineCount();
    probe.send("clocks");
    String line = probe.awaitLine("CLOCKS ", from, Duration.ofSeconds(10)).orElse(null);
    if (line == null) {
      return null;
    }
    String[] f = line.split(" ");
    return new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])};
  }

}
