package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench --peers all}: the pause scenario, one trial, on embedded PostgreSQL and a local
 * redis-server; every peer gets a row with a measured gap and a stale-write count (measured, not
 * asserted to be any particular number), and the report names the libraries' versions. ShedLock
 * runs at its 30 s keep-alive minimum, so this takes a few minutes.
 */
class PeersSmokeTest {

  @Test
  @Timeout(600)
  void pauseWithEveryPeerOnPostgresAndRedis(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Bench.run(new String[] {"--backends", "postgres,redis", "--start-local",
        "--only", "failover", "--scenarios", "pause", "--trials", "1", "--ttl-ms", "2000",
        "--peers", "all", "--out", dir.toString()},
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);
    String why = text + err.toString(StandardCharsets.UTF_8);
    assertThat(status).as(why).isZero();
    assertThat(text).doesNotContain("ERROR", "VIOLATION");
    for (PeerMechanism m : PeerMechanism.values()) {
      String label = m.backend() + " · " + m.id() + " " + m.version();
      String row = text.lines().filter(l -> l.startsWith(label)).findFirst().orElse(null);
      assertThat(row).as("row of %s in:%n%s", label, why).isNotNull();
      // ... pause  <ttl>  1  <gap p50> <gap p95> <gap max> n/a n/a <attempted> 0 <accepted>
      Matcher cols = Pattern.compile("pause\\s+\\S+ s\\s+1\\s+(\\d+(\\.\\d+)? m?s)\\s+.*\\s(\\d+)"
          + "\\s+0\\s+(\\d+)$").matcher(row);
      assertThat(cols.find()).as(row).isTrue();
      assertThat(cols.group(3)).as("unfenced: every stale attempt accepted: " + row)
          .isEqualTo(cols.group(4));
    }
    String json = Files.readString(dir.resolve("report.json"));
    JsonChecker.check(json);
    assertThat(json).contains("\"peer_libraries\"",
        "\"org.springframework.integration:spring-integration-jdbc\": \""
            + PeerMechanism.SPRING_INTEGRATION_JDBC.version() + "\"",
        "\"org.redisson:redisson\": \"" + PeerMechanism.REDISSON.version() + "\"",
        "\"mechanism\": \"shedlock-jdbc\"");
    assertThat(PeerMechanism.REDISSON.version()).matches("\\d+\\.\\d+\\.\\d+");
  }
}
