package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The whole CLI in-process on the memory backend, with worker JVMs, at tiny sizes. */
class BenchSmokeTest {

  @Test
  @Timeout(90)
  void memoryRunPrintsTheTablesAndWritesTheReport(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Bench.run(new String[] {"--backends", "memory", "--trials", "1", "--ttl-ms", "1000",
        "--work-ms", "200", // wide enough that a loaded machine still freezes the leader mid-unit
        "--scale", "1,10", "--scale-rounds", "2", "--scale-ttl", "1500ms", "--latency-samples", "50", "--latency-warmup", "1s", "--out",
        dir.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);
    String progress = err.toString(StandardCharsets.UTF_8);
    assertThat(status).as(text + progress).isZero();
    assertThat(text).contains("FAILOVER", "LATENCY", "SCALE", "memory   clean", "memory   crash",
        "memory   pause", "plain write on memory: ConcurrentHashMap.put", "stale writes accepted: 0",
        "skipped postgres", "skipped redis").doesNotContain("ERROR", "VIOLATION");
    // the paused leader came back mid-unit and its write was rejected
    assertThat(text.lines().filter(l -> l.startsWith("memory   pause")).findFirst().orElseThrow())
        .matches(".*\\s1\\s+1\\s+0$");
    assertThat(progress).contains("failover pause 1/1", "scale 10 leases");
    assertThat(text.lines().filter(l -> l.startsWith("memory   10 ")).findFirst().orElseThrow())
        .as("one group: one batch call per round, every name held")
        .contains("1.50 s (500 ms)", "one call per name").containsPattern("\\s1\\s.*\\syes\\s+0$");
    for (String f : new String[] {"report.md", "report.json", "failover.svg"}) {
      assertThat(dir.resolve(f)).exists();
      assertThat(Files.size(dir.resolve(f))).isPositive();
    }
    JsonChecker.check(Files.readString(dir.resolve("report.json")));
  }
}
