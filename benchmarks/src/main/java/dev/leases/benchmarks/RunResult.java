package dev.leases.benchmarks;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Everything one {@code bench} run measured, for the table and the report files. */
final class RunResult {

  /** A backend that was not included, and how to include it. */
  record Skipped(String name, String how) {}

  /** One backend's figures; a part that did not run (or failed) is null / empty. */
  static final class BackendResult {
    final String name;
    String description = "";
    Map<String, String> facts = Map.of();
    Failover.Result failover;
    Latency.Result latency;
    final List<Scale.Result> scale = new ArrayList<>();
    final List<Peers.Result> peers = new ArrayList<>();
    final List<String> errors = new ArrayList<>();

    BackendResult(String name) {
      this.name = name;
    }
  }

  final String runId;
  final Instant started;
  final BenchOptions options;
  final List<BackendResult> backends = new ArrayList<>();
  final List<Skipped> skipped = new ArrayList<>();
  final List<String> violations = new ArrayList<>();
  double wallSeconds;

  RunResult(String runId, Instant started, BenchOptions options) {
    this.runId = runId;
    this.started = started;
    this.options = options;
  }

  boolean hasErrors() {
    return backends.stream().anyMatch(b -> !b.errors.isEmpty());
  }
}
