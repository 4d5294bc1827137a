package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.benchmarks.GapAnalysis.Trial;
import dev.leases.benchmarks.RunResult.BackendResult;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;

class ReportTest {

  static RunResult sample(boolean violation) {
    BenchOptions o = BenchOptions.parse(new String[] {"--backends", "memory"});
    RunResult run = new RunResult("20250101-000000-abcd", Instant.parse("2025-01-01T00:00:00Z"), o);
    BackendResult b = new BackendResult("memory");
    b.description = "a \"quoted\" <store> & friends\twith a tab";
    b.facts = Map.of("server_version", "1.0");
    b.failover = new Failover.Result(Duration.ofSeconds(2), List.of(
        new Trial("clean", 1, "w1", 1, "w2", 2, 35, 0, 0, 0, 0, ""),
        new Trial("crash", 1, "w2", 2, "w3", 3, 1510, 1500, 0, 0, 0, ""),
        new Trial("pause", 1, "w3", 3, "w4", 4, 1620, 1600, 1, violation ? 0 : 1,
            violation ? 1 : 0, ""),
        new Trial("pause", 2, "w4", 4, null, 0, Double.NaN, Double.NaN, 0, 0, 0, "no takeover")),
        violation ? List.of("memory pause trial 1: 1 stale write ACCEPTED") : List.of());
    Map<String, double[]> micros = new LinkedHashMap<>();
    for (String op : List.of(Latency.FRESH, Latency.RENEW, Latency.MISS, Latency.RELEASE,
        Latency.TAKEOVER, Latency.PLAIN)) {
      micros.put(op, new double[] {1, 2, 3, 4});
    }
    b.latency = new Latency.Result(Duration.ofSeconds(30), "ConcurrentHashMap.put", micros,
        50);
    b.scale.add(new Scale.Result(100, Duration.ofSeconds(10), Duration.ofMillis(3333),
        "one call per name", 3.5, true, Duration.ofMillis(3333), List.of(1.0, 2.0), 1, 40, 43, 5, List.of("leases-call-# x3"),
        0, 0, ""));
    run.backends.add(b);
    run.skipped.add(new RunResult.Skipped("redis", "set LEASES_REDIS_URI"));
    run.violations.addAll(b.failover.violations());
    run.wallSeconds = 12.5;
    return run;
  }

  @Test
  void writesWellFormedJsonMarkdownAndSvg(@TempDir Path dir) throws Exception {
    List<Path> files = Report.write(sample(false), dir);
    assertThat(files).extracting(p -> p.getFileName().toString())
        .containsExactly("report.md", "report.json", "failover.svg");

    String json = Files.readString(dir.resolve("report.json"));
    JsonChecker.check(json);
    assertThat(json).contains("\"machine\"", "\"cores\"", "\"memory_bytes\"", "\"jvm\"",
        "\"library_version\"", "\"samples_us\"", "\"trials\"", "\"gap_ms\": null",
        "\\\"quoted\\\" <store> & friends\\twith a tab", "\"safety_violations\": []",
        "\"store_calls_per_round\": 1", "\"threads_delta\": 3", "\"threads_peak\": 43",
        "\"renew_round_p50_ms\": 1.0", "\"all_held\": true", "\"batch\": \"one call per name\"",
        "\"scale_ttl_ms\": 10000", "\"new_threads\": [", "\"leases-call-# x3\"",
        "\"target_p50_over_plain_p50\": null");

    String md = Files.readString(dir.resolve("report.md"));
    assertThat(md).contains("## Failover", "## Latency", "## Scale", "![failover gaps](failover.svg)",
        "skipped **redis**", "Stale writes accepted: 0");
    for (String table : md.split("\n\n")) {
      List<String> rows = table.lines().filter(l -> l.startsWith("|")).toList();
      if (!rows.isEmpty()) {
        long cols = pipes(rows.get(0));
        assertThat(rows).allSatisfy(r -> assertThat(pipes(r)).as(r).isEqualTo(cols));
      }
    }

    Document svg = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(
        new ByteArrayInputStream(Files.readAllBytes(dir.resolve("failover.svg"))));
    assertThat(svg.getDocumentElement().getTagName()).isEqualTo("svg");
    assertThat(svg.getElementsByTagName("circle").getLength()).isGreaterThanOrEqualTo(3);
    assertThat(Files.readString(dir.resolve("failover.svg"))).contains("memory · crash",
        "#d62728");
  }

  private static long pipes(String row) {
    return row.replace("\\|", "").chars().filter(c -> c == '|').count();
  }

  @Test
  void consoleTableShowsFiguresAndShoutsAboutViolations() {
    String ok = Report.console(sample(false));
    assertThat(ok).contains("FAILOVER", "LATENCY", "SCALE", "memory   crash", "1.51 s", "+10 ms",
        "2 (1 failed)", "stale writes accepted: 0").doesNotContain("VIOLATION");
    assertThat(ok).contains("store calls / round", "threads (+ during)", "43 (+3)",
        "one call per name", "1.0 ms / 2.0 ms", "10.00 s (3.33 s)");
    String bad = Report.console(sample(true));
    assertThat(bad).contains("1 VIOLATION", "!!! SAFETY VIOLATIONS: 1 !!!");
    assertThat(FailoverChart.svg(sample(true))).contains("STALE WRITES ACCEPTED: 1");
  }

  @Test
  void latencyTableJudgesAcquireAndRenewalAgainstTheIssuesTargets() {
    RunResult run = new RunResult("x", Instant.now(), BenchOptions.parse(new String[0]));
    BackendResult b = new BackendResult("postgres");
    Map<String, double[]> micros = new LinkedHashMap<>();
    micros.put(Latency.FRESH, new double[] {130, 130, 130});
    micros.put(Latency.RENEW, new double[] {110, 110, 110});
    micros.put(Latency.RELEASE, new double[] {500, 500, 500});
    micros.put(Latency.TAKEOVER, new double[] {118, 118, 118});
    micros.put(Latency.PLAIN, new double[] {100, 100, 100});
    b.latency = new Latency.Result(Duration.ofSeconds(30), "upsert", micros, 50);
    run.backends.add(b);
    List<String> rows = Report.latencyTable(run).text().lines().toList();
    assertThat(rows.get(0)).contains("p50 / plain p50", "target");
    assertThat(rows).anySatisfy(r -> assertThat(r).contains("fresh acquire", "1.3x",
        "<= 1.2x: MISSED"));
    assertThat(rows).anySatisfy(r -> assertThat(r).contains("renewal", "1.1x", "<= 1.2x: met"));
    assertThat(rows).anySatisfy(r -> assertThat(r).contains("takeover acquire", "1.2x",
        "<= 1.2x: met"));
    assertThat(rows).anySatisfy(r -> assertThat(r).contains("release", "5.0x")
        .doesNotContain("<="));
    assertThat(Report.json(run)).contains("\"meets_target\": false", "\"meets_target\": true",
        "\"target_p50_over_plain_p50\": 1.2");
    assertThat(Report.latencyTarget("etcd", Latency.RENEW)).isEqualTo(1.5);
    assertThat(Report.latencyTarget("consul", Latency.FRESH)).isEqualTo(1.5);
    assertThat(Report.latencyTarget("redis", Latency.TAKEOVER)).isEqualTo(1.2);
    assertThat(Report.latencyTarget("memory", Latency.FRESH)).isNaN();
  }

  @Test
  void emptyRunStillRendersValidFiles(@TempDir Path dir) throws Exception {
    RunResult run = new RunResult("x", Instant.now(), BenchOptions.parse(new String[0]));
    Report.write(run, dir);
    JsonChecker.check(Files.readString(dir.resolve("report.json")));
    DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(dir.resolve("failover.svg")
        .toFile());
  }

  @Test
  void jsonWriterEscapesAndRejectsNothingValid() throws Exception {
    String s = Json.write(Map.of("k", List.of(1, 2.5, Double.NaN, "a\u0001b", true,
        Float.POSITIVE_INFINITY, 0.1f)));
    JsonChecker.check(s);
    assertThat(s).contains("\\u0001");
    com.fasterxml.jackson.databind.JsonNode k = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(s).get("k");
    assertThat(k.get(2).isNull()).as("NaN -> null").isTrue();
    assertThat(k.get(3).asText()).isEqualTo("a\u0001b");
    assertThat(k.get(5).isNull()).as("Infinity -> null").isTrue();
    assertThat(k.get(6).asText()).isEqualTo("0.1");
    assertThatThrownBy(() -> JsonChecker.check("{\"a\": 1,}"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8)).isEqualTo(s);
  }
}
