package dev.leases.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.redis.RedisLeaseStore;
import dev.leases.redis.RedisServers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The executable jar as an operator runs it: {@code java -jar lease-cli.jar}, a separate process.
 * Runs in the integration-test phase, after the shade plugin built the jar.
 */
class ShadedJarTest {

  private static final Path JAR = Path.of(System.getProperty("leases.cli.jar",
      "target/lease-cli.jar"));

  record Run(int code, String out, String err, Duration took) {}

  private static Run java(String... args) throws IOException, InterruptedException {
    assertThat(JAR).as("run `mvn -pl lease-cli package` first").exists();
    List<String> argv = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", JAR.toString()));
    argv.addAll(List.of(args));
    Path out = Files.createTempFile("lease-cli", ".out");
    Path err = Files.createTempFile("lease-cli", ".err");
    ProcessBuilder pb = new ProcessBuilder(argv).redirectOutput(out.toFile())
        .redirectError(err.toFile());
    pb.environment().remove(Secrets.ENV_VAR);
    long start = System.nanoTime();
    Process p = pb.start();
    if (!p.waitFor(2, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("java -jar lease-cli.jar " + args + " did not end in 2 minutes");
    }
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    Run r = new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8), took);
    Files.delete(out);
    Files.delete(err);
    return r;
  }

  @Test
  void theJarInspectsARealStoreAndPrintsJson() throws Exception {
    String n = "jar-" + UUID.randomUUID();
    try (RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build()) {
      LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1))
          .orElseThrow();

      Run r = java("inspect", n, "--json", "--store", "redis", "--url", RedisServers.sharedUri());

      assertThat(r.code()).as(r.toString()).isZero();
      JsonNode j = new ObjectMapper().readTree(r.out());
      assertThat(j.get("status").asText()).isEqualTo("HELD");
      assertThat(j.get("lastToken").asLong()).isEqualTo(g.token());
      assertThat(r.err()).as("no log noise on a successful call").isEmpty();
      System.out.println("lease-cli.jar: inspect on Redis took " + r.took().toMillis() + " ms");
    }
  }

  @Test
  void exitCodesOfTheProcess() throws Exception {
    Run help = java("--help");
    assertThat(help.code()).as(help.toString()).isZero();
    assertThat(help.out()).contains("inspect", "list", "watch", "token", "history", "release",
        "Exit codes");
    System.out.println("lease-cli.jar: --help took " + help.took().toMillis() + " ms, jar "
        + Files.size(JAR) + " bytes");

    Run usage = java("inspect", "job", "--store", "nosuch");
    assertThat(usage.code()).as(usage.toString()).isEqualTo(ExitCodes.USAGE);

    Run down = java("inspect", "job", "--store", "etcd", "--endpoints", "http://127.0.0.1:1");
    assertThat(down.code()).as(down.toString()).isEqualTo(ExitCodes.UNAVAILABLE);
    assertThat(down.err()).contains("127.0.0.1:1", "--endpoints");
  }
}
