package dev.leases.benchmarks;

import dev.leases.benchmarks.RunResult.BackendResult;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code bench --peers}: which {@link PeerMechanism}s run on which backend, running them after our
 * own failover part on the same backend, and their part of the report.
 */
final class Peers {

  /** One mechanism's failover figures on one backend. */
  record Result(PeerMechanism mechanism, String version, Failover.Result failover, String note) {

    /** The failover table's first column. */
    String label(String backend) {
      return backend + " · " + mechanism.id() + " " + version;
    }
  }

  static final String NOTE = "peers (--peers) = other libraries' leader mechanisms as their"
      + " documentation writes them, in the same worker JVMs, on the same store, TTL and faults;"
      + " they have no token, so their writes go to an unfenced resource and every write the"
      + " resumed paused leader makes after its successor's first write is accepted (the same"
      + " count as ours, which a fence rejects); bound n/a; a peer that has not noticed its loss "
      + Failover.RETIRE_AFTER_S + " s after SIGCONT is retired, so its count is per that window.";

  private Peers() {}

  /**
   * Problems with {@code --peers} for these backends: a mechanism named explicitly whose backend
   * is not included. ({@code all} takes only those whose backend is included; see
   * {@link #skipped}.)
   */
  static List<String> problems(BenchOptions o, List<String> backends) {
    List<String> out = new ArrayList<>();
    if (!o.peerMechanisms.isEmpty() && !o.parts.contains("failover")) {
      out.add("--peers is part of failover: include failover in --only");
    }
    for (PeerMechanism m : o.peerNames.contains("all") ? List.<PeerMechanism>of()
        : o.peerMechanisms) {
      if (!backends.contains(m.backend())) {
        out.add("--peers " + m.id() + " runs on " + m.backend() + ": add " + m.backend()
            + " to --backends" + (m.backend().equals("redis") ? " (with --start-local to start"
            + " the installed redis-server)" : ""));
      }
    }
    return out;
  }

  /** Mechanisms of {@code --peers all} left out because their backend is not included. */
  static List<RunResult.Skipped> skipped(BenchOptions o, List<String> backends) {
    List<RunResult.Skipped> out = new ArrayList<>();
    for (PeerMechanism m : o.peerMechanisms) {
      if (!backends.contains(m.backend())) {
        out.add(new RunResult.Skipped("peer " + m.id(), "runs on " + m.backend() + "; add "
            + m.backend() + " to --backends"));
      }
    }
    return out;
  }

  /** Runs every chosen mechanism that runs on {@code backend}, each into {@code r.peers}. */
  static void run(Backend backend, BackendResult r, BenchOptions o, Path logs, Progress progress,
      String runId, List<String> errors) {
    for (PeerMechanism m : o.peerMechanisms) {
      if (!m.backend().equals(backend.name())) {
        continue;
      }
      try {
        PeerMechanism.Ttl ttl = m.fitTtl(Duration.ofMillis(o.ttlMs));
        progress.say("%s · failover with peer %s %s (%s)%s", backend.name(), m.id(), m.version(),
            m.how(), ttl.note().isEmpty() ? "" : " — " + ttl.note());
        m.prepare(backend.recipe());
        Failover.Result f = new Failover(backend, m, o, ttl.ttl(), logs, progress, runId).run();
        r.peers.add(new Result(m, m.version(), f, ttl.note()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        errors.add("failover " + m.id() + ": interrupted");
        return;
      } catch (Exception | AssertionError e) {
        errors.add("failover " + m.id() + ": " + e);
        progress.say("%s · failover %s FAILED: %s", backend.name(), m.id(), e);
      }
    }
  }

  /** The {@code peer_libraries} object of report.json: coordinates → version, for those that ran. */
  static Map<String, Object> librariesJson(RunResult run) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (BackendResult b : run.backends) {
      for (Result p : b.peers) {
        m.put(p.mechanism().artifact(), p.version());
      }
    }
    return m;
  }

  /** One entry of a backend's {@code peers} list in report.json; the failover object as ours. */
  static Map<String, Object> json(Result p, Map<String, Object> failover) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("mechanism", p.mechanism().id());
    m.put("library", p.mechanism().artifact());
    m.put("version", p.version());
    m.put("how", p.mechanism().how());
    m.put("note", p.note());
    m.put("failover", failover);
    return m;
  }
}
