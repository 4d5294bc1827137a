package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench --peers}: every peer runs through the failover harness on embedded PostgreSQL and a
 * local redis-server, one trial, and gets a row with a measured gap and a stale-write count
 * (measured, not asserted to be any particular number); the report names the libraries' versions.
 * Spring Integration and Redisson run the pause scenario at a 2 s TTL. ShedLock's keep-alive refuses
 * TTLs under 30 s, so a pause would cost over 30 s here: it runs the clean scenario (a handover),
 * which proves the integration; its pause figures come from the benchmark run in the README.
 */
class PeersSmokeTest {

  @Test
  @Timeout(600)
  void everyPeerRunsThroughTheFailoverHarness(@TempDir Path dir) throws Exception {
    String pause = run(dir.resolve("pause"), "pause", "spring-integration-jdbc,redisson");
    rows(pause, "pause", List.of(PeerMechanism.SPRING_INTEGRATION_JDBC, PeerMechanism.REDISSON));
    String clean = run(dir.resolve("clean"), "clean", "shedlock-jdbc");
    rows(clean, "clean", List.of(PeerMechanism.SHEDLOCK_JDBC));
    String json = Files.readString(dir.resolve("pause").resolve("report.json"));
    JsonChecker.check(json);
    assertThat(json).contains("\"peer_libraries\"",
        "\"org.springframework.integration:spring-integration-jdbc\": \""
            + PeerMechanism.SPRING_INTEGRATION_JDBC.version() + "\"",
        "\"org.redisson:redisson\": \"" + PeerMechanism.REDISSON.version() + "\"");
    assertThat(Files.readString(dir.resolve("clean").resolve("report.json")))
        .contains("\"mechanism\": \"shedlock-jdbc\"");
    assertThat(PeerMechanism.REDISSON.version()).matches("\\d+\\.\\d+\\.\\d+");
  }

  private static String run(Path out, String scenario, String peers) throws Exception {
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Bench.run(new String[] {"--backends", "postgres,redis", "--start-local",
        "--only", "failover", "--scenarios", scenario, "--trials", "1", "--ttl-ms", "2000",
        "--peers", peers, "--out", out.toString()},
        new PrintStream(text, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String printed = text.toString(StandardCharsets.UTF_8);
    assertThat(status).as(printed + err.toString(StandardCharsets.UTF_8)).isZero();
    assertThat(printed).doesNotContain("ERROR", "VIOLATION");
    return printed;
  }

  private static void rows(String text, String scenario, List<PeerMechanism> peers) {
    for (PeerMechanism m : peers) {
      String label = m.backend() + " · " + m.id() + " " + m.version();
      String row = text.lines().filter(l -> l.startsWith(label)).findFirst().orElse(null);
      assertThat(row).as("row of %s in:%n%s", label, text).isNotNull();
      // ... <scenario>  <ttl>  1  <gap p50> <gap p95> <gap max> n/a n/a <attempted> 0 <accepted>
      Matcher cols = Pattern.compile(scenario + "\\s+\\S+ s\\s+1\\s+(\\d+(\\.\\d+)? m?s)\\s+.*\\s"
          + "(\\d+)\\s+0\\s+(\\d+)$").matcher(row);
      assertThat(cols.find()).as(row).isTrue();
      assertThat(cols.group(3)).as("unfenced: every stale attempt accepted: " + row)
          .isEqualTo(cols.group(4));
    }
  }
}
