package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.TtlRange;
import dev.leases.benchmarks.RunResult.BackendResult;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/** The {@code bench} command: resolves backends, runs the three parts on each, reports. */
final class Bench {

  private Bench() {}

  static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
    BenchOptions o;
    try {
      o = BenchOptions.parse(args);
    } catch (IllegalArgumentException e) {
      err.println(e.getMessage() + "\n\n" + BenchOptions.USAGE);
      return 2;
    }
    if (o.help) {
      out.println(BenchOptions.USAGE);
      return 0;
    }
    List<String> problems = new ArrayList<>();
    List<Backends.Kind> chosen = new ArrayList<>();
    for (String name : o.backends) {
      Backends.Kind k = Backends.find(name).orElse(null);
      if (k == null) {
        problems.add("unknown backend '" + name + "'; known: " + String.join(", ",
            Backends.names()));
      } else if (k.missing(o) != null) {
        problems.add("cannot include " + name + ": " + k.missing(o));
      } else if (!chosen.contains(k)) {
        chosen.add(k);
      }
    }
    if (chosen.isEmpty() && problems.isEmpty()) {
      problems.add("--backends names no backend");
    }
    List<String> chosenNames = chosen.stream().map(Backends.Kind::name).toList();
    problems.addAll(Peers.problems(o, chosenNames));
    if (!problems.isEmpty()) {
      problems.forEach(p -> err.println("bench: " + p));
      return 2;
    }
    Instant started = Instant.now();
    String runId = runId();
    RunResult run = new RunResult(runId, started, o);
    for (Backends.Kind k : Backends.ALL) {
      if (!chosen.contains(k) && !k.name().equals("custom")) {
        String missing = k.missing(o);
        run.skipped.add(new RunResult.Skipped(k.name(), missing == null
            ? "available; include it with --backends " + String.join(",", o.backends) + ","
                + k.name()
            : missing + "; then name it in --backends"));
      }
    }
    run.skipped.addAll(Peers.skipped(o, chosenNames));
    Path dir = o.out != null ? o.out : Path.of("reports", runId.substring(0, 15));
    Path logs = Files.createDirectories(dir.resolve("logs"));
    Progress progress = new Progress(err);
    progress.say("backends %s; skipped %s; report folder %s", chosen.stream().map(Backends.Kind::name)
        .toList(), run.skipped.stream().map(RunResult.Skipped::name).toList(), dir);

    for (Backends.Kind k : chosen) {
      BackendResult r = new BackendResult(k.name());
      run.backends.add(r);
      progress.say("%s · starting", k.name());
      Backend backend;
      try {
        backend = k.start(o);
      } catch (Exception e) {
        r.errors.add("could not start: " + e);
        progress.say("%s · could not start: %s", k.name(), e);
        continue;
      }
      try (backend) {
        r.description = backend.description();
        r.facts = backend.facts();
        progress.say("%s · %s", k.name(), r.description);
        if (o.parts.contains("failover")) {
          part(r, "failover", progress, () -> {
            Duration ttl;
            try (LeaseStore s = backend.openStore()) {
              ttl = fit(Duration.ofMillis(o.ttlMs), s);
            }
            r.failover = new Failover(backend, o, ttl, logs, progress, runId).run();
            run.violations.addAll(r.failover.violations());
          });
          Peers.run(backend, r, o, logs, progress, runId, r.errors);
        }
        if (o.parts.contains("latency")) {
          part(r, "latency", progress, () -> {
            progress.say("%s · latency: %d samples per call", k.name(), o.latencySamples);
            r.latency = Latency.run(backend, o.latencySamples,
                Latency.Warmup.atLeast(o.latencyWarmup, o.latencyWarmupTime), runId);
            progress.say("%s · latency: renewal p50 %s, plain write p50 %s", k.name(),
                Report.us(Stats.of(r.latency.micros().get(Latency.RENEW)).p50()),
                r.latency.micros().containsKey(Latency.PLAIN)
                    ? Report.us(Stats.of(r.latency.micros().get(Latency.PLAIN)).p50()) : "n/a");
          });
        }
        if (o.parts.contains("scale")) {
          for (int n : o.scale) {
            part(r, "scale " + n, progress, () -> {
              Scale.Result s = Scale.run(backend, n, o.scaleRounds, o.scaleTtl, runId);
              r.scale.add(s);
              progress.say("%s · scale %,d leases: ttl %s, %s batch, renew round p50 %s,"
                  + " %d calls/round, threads %d (+%d: %s), all held: %s", k.name(), n,
                  Failover.ms(s.ttl().toMillis()), s.batch(),
                  Failover.ms(Stats.of(s.renewRoundMs()).p50()), s.callsPerRound(),
                  s.threadsPeak(), s.threadsDelta(),
                  s.newThreads().isEmpty() ? "none" : String.join(", ", s.newThreads()),
                  Report.held(s));
            });
          }
        }
      }
    }
    run.wallSeconds = progress.elapsedSeconds();
    out.print(Report.console(run));
    List<Path> files = Report.write(run, dir);
    out.println("report: " + files.stream().map(Path::toString).toList() + " (worker logs in "
        + logs + ")");
    if (!run.violations.isEmpty()) {
      err.println("SAFETY VIOLATION: " + run.violations.size() + " — see the report");
      return 1;
    }
    return run.hasErrors() ? 3 : 0;
  }

  /** A run's id: local time to the second and four random hex digits. */
  static String runId() {
    return DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").format(LocalDateTime.now())
        + "-" + HexFormat.of().toHexDigits((short) ThreadLocalRandom.current().nextInt());
  }

  private interface Part {
    void run() throws Exception;
  }

  private static void part(BackendResult r, String what, Progress progress, Part p) {
    try {
      p.run();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      r.errors.add(what + ": interrupted");
    } catch (Exception | AssertionError e) {
      r.errors.add(what + ": " + e);
      progress.say("%s · %s FAILED: %s", r.name, what, e);
    }
  }

  /** {@code want}, moved into the store's TTL range and rounded up to its granularity. */
  static Duration fit(Duration want, LeaseStore store) {
    TtlRange r = store.ttlRange();
    Duration d = want.compareTo(r.min()) < 0 ? r.min() : want;
    d = d.compareTo(r.max()) > 0 ? r.max() : d;
    d = r.roundUp(d);
    return d.compareTo(r.max()) > 0 ? r.max() : d;
  }
}
