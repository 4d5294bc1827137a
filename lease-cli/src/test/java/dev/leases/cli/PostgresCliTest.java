package dev.leases.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.postgres.PostgresLeaseStore;
import dev.leases.postgres.PostgresServers;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CLI against a real PostgreSQL (embedded, or $LEASES_POSTGRES_URL), run in-process. */
class PostgresCliTest {

  private static HikariDataSource pool;
  private static PostgresLeaseStore store;
  private static String table;

  @BeforeAll
  static void start() {
    pool = PostgresServers.pool(2);
    table = PostgresServers.freshTable();
    store = PostgresLeaseStore.builder(pool).table(table).build(); // creates the table
  }

  @AfterAll
  static void stop() {
    store.close();
    pool.close();
  }

  private static String name() {
    return "cli-" + UUID.randomUUID();
  }

  private static CliRun cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--store", "postgres", "--url", PostgresServers.url(), "--table", table));
    return CliRun.run(all.toArray(String[]::new));
  }

  /** A lease row is updated in place: {@code history} says PostgreSQL keeps none, etcd does. */
  @Test
  void historyIsRefusedSayingPostgresKeepsNoneAndEtcdDoes() {
    String n = name();
    store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();
    CliRun.assertHistoryRefused(cli("history", n), "postgres");
    CliRun.assertHistoryRefused(cli("history", n, "--json"), "postgres");
  }

  @Test
  void inspectShowsHeldWithHolderTokenAndExpiry() {
    String n = name();
    LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();

    CliRun r = cli("inspect", n, "--json");

    assertThat(r.code()).as(r.toString()).isZero();
    JsonNode j = r.json();
    assertThat(j.get("name").asText()).isEqualTo(n);
    assertThat(j.get("status").asText()).isEqualTo("HELD");
    assertThat(j.get("holder").asText()).isEqualTo(g.holder().value());
    assertThat(j.get("lastToken").asLong()).isEqualTo(g.token());
    assertThat(j.get("remainingMillis").asLong()).isBetween(1L, 60_000L);

    CliRun text = cli("inspect", n);
    assertThat(text.out()).contains(n, "HELD", g.holder().value(), "token " + g.token());
  }

  @Test
  void inspectTellsExpiredFromFree() {
    String n = name();
    store.acquireOrRenew(n, HolderId.generate(), Duration.ofMillis(100)).orElseThrow();
    await().atMost(Duration.ofSeconds(30)).until(() -> store.inspect(n) instanceof LeaseState.Expired);

    assertThat(cli("inspect", n, "--json").json().get("status").asText()).isEqualTo("EXPIRED");
    CliRun free = cli("inspect", name(), "--json");
    assertThat(free.code()).isZero();
    assertThat(free.json().get("status").asText()).isEqualTo("FREE");
  }

  @Test
  void tokenPrintsTheLatestGrantsToken() {
    String n = name();
    LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();

    CliRun r = cli("token", n);
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.out().trim()).isEqualTo(Long.toString(g.token()));
    assertThat(cli("token", n, "--json").json().get("token").asLong()).isEqualTo(g.token());
  }

  @Test
  void listShowsNamesWithThePrefixInCodePointOrderAndTheirStates() {
    String prefix = "list-" + UUID.randomUUID() + "/";
    HolderId holder = HolderId.generate();
    for (String n : List.of("b", "a", "B", "a_")) {
      store.acquireOrRenew(prefix + n, holder, Duration.ofMinutes(1)).orElseThrow();
    }
    store.release(prefix + "a", holder);
    store.acquireOrRenew(name(), holder, Duration.ofMinutes(1)).orElseThrow();

    CliRun r = cli("list", "--prefix", prefix, "--json");

    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.jsonLines()).extracting(j -> j.get("name").asText() + " " + j.get("status").asText())
        .containsExactly(prefix + "B HELD", prefix + "a FREE", prefix + "a_ HELD",
            prefix + "b HELD");
    CliRun text = cli("list", prefix, "--limit", "2");
    assertThat(text.code()).as(text.toString()).isZero();
    assertThat(text.out().lines()).hasSize(2);
    assertThat(text.out().lines().toList().get(0)).startsWith(prefix + "B  HELD  token ");
    assertThat(text.out().lines().toList().get(1)).startsWith(prefix + "a  FREE  token ");
    // "_" is text, not LIKE's any-character
    assertThat(cli("list", prefix + "a_", "--json").jsonLines()).extracting(j -> j.get("name")
        .asText()).containsExactly(prefix + "a_");
  }

  @Test
  void listRefusesBadArgumentsBeforeContactingTheStore() {
    CliRun limit = CliRun.run("list", "--limit", "10001", "--store", "postgres", "--url",
        "jdbc:postgresql://127.0.0.1:1/postgres");
    assertThat(limit.code()).as(limit.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(limit.err()).contains("--limit", "1 to 10000");
    CliRun twice = cli("list", "a", "--prefix", "b");
    assertThat(twice.code()).as(twice.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(twice.err()).contains("once");
  }

  /**
   * A table that does not exist has no names: the listing is empty (exit 0), says on standard
   * error what to check, and creates nothing; inspect of a name there is refused.
   */
  @Test
  void listOnAMissingTableIsEmptyAndCreatesNothing() throws Exception {
    CliRun r = CliRun.run("list", "--store", "postgres", "--url", PostgresServers.url(),
        "--table", "no_such_table_here");
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).contains("no lease name", "no_such_table_here", "--table");

    CliRun inspect = CliRun.run("inspect", "x", "--store", "postgres", "--url",
        PostgresServers.url(), "--table", "no_such_table_here");
    assertThat(inspect.code()).as(inspect.toString()).isEqualTo(ExitCodes.REFUSED);
    assertThat(inspect.err()).contains("no_such_table_here", "does not exist", "--table");
    try (var c = PostgresServers.connect(); var rs = c.createStatement()
        .executeQuery("SELECT to_regclass('no_such_table_here') IS NULL")) {
      rs.next();
      assertThat(rs.getBoolean(1)).as("the CLI must not create tables").isTrue();
    }
  }

  @Test
  void forcedReleaseReleasesAsTheInspectedHolderAndWarns() {
    String n = name();
    LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();

    CliRun refused = cli("release", n);
    assertThat(refused.code()).as(refused.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(refused.err()).contains("--force");
    assertThat(store.inspect(n)).isInstanceOf(LeaseState.Held.class);

    CliRun wrongHolder = cli("release", n, "--force", "--holder", "someone-else");
    assertThat(wrongHolder.code()).as(wrongHolder.toString()).isEqualTo(ExitCodes.REFUSED);
    assertThat(store.inspect(n)).isInstanceOf(LeaseState.Held.class);

    CliRun r = cli("release", n, "--force", "--holder", g.holder().value(), "--json");
    assertThat(r.code()).as(r.toString()).isZero();
    JsonNode j = r.json();
    assertThat(j.get("released").asBoolean()).isTrue();
    assertThat(j.get("holder").asText()).isEqualTo(g.holder().value());
    assertThat(j.get("token").asLong()).isEqualTo(g.token());
    assertThat(j.get("now").get("status").asText()).isEqualTo("FREE");
    assertThat(r.err()).contains("warning", "may still be writing", "fencing tokens");
    assertThat(store.inspect(n)).isInstanceOf(LeaseState.Free.class);

    CliRun again = cli("release", n, "--force");
    assertThat(again.code()).as(again.toString()).isEqualTo(ExitCodes.REFUSED);
    assertThat(again.err()).contains("FREE", "nothing to release");
    // The next grant is fenced above the released one.
    assertThat(store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow()
        .token()).isGreaterThan(g.token());
  }

  @Test
  void watchPrintsEachChangeAndIsWokenByReleaseHints() throws Exception {
    String n = name();
    HolderId first = HolderId.generate();
    store.acquireOrRenew(n, first, Duration.ofMinutes(10)).orElseThrow();
    // A 10 min lease: within the wait, only the release hint (LISTEN/NOTIFY) can wake the watch.
    CliRun.assertReleaseHintWakesWatch(n, List.of("--store", "postgres", "--url",
        PostgresServers.url(), "--table", table), () -> store.release(n, first));
  }

  @Test
  void malformedNamesAreUsageErrorsAndNothingIsSent() {
    for (String bad : List.of("half\uD800", "\uDC00tail", "tab\there", " ", "x".repeat(201))) {
      CliRun r = cli("inspect", bad);
      assertThat(r.code()).as(bad + ": " + r).isEqualTo(ExitCodes.USAGE);
      assertThat(r.err()).contains("lease name");
    }
    CliRun surrogate = cli("release", "a\uD800b", "--force");
    assertThat(surrogate.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(surrogate.err()).contains("unpaired surrogate U+D800");
    assertThat(cli("list", "--prefix", "p\uDBFF").err()).contains("unpaired surrogate");
  }

  @Test
  void unreachableStoreFailsFastWithExit3AndWhatToChange() {
    long start = System.nanoTime();
    CliRun r = CliRun.run("inspect", "job", "--store", "postgres",
        "--url", "jdbc:postgresql://127.0.0.1:1/postgres", "--timeout", "30000");
    Duration took = Duration.ofNanos(System.nanoTime() - start);

    assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.UNAVAILABLE);
    assertThat(r.err()).contains("127.0.0.1:1", "refused", "Check --url");
    // Refused is known at once: far below the 30 s it would take to wait out the timeout.
    assertThat(took).isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void secretsFromFileOrEnvironmentAreNeverPrinted(@TempDir Path dir) throws Exception {
    String secret = "s3cr3t-" + UUID.randomUUID();
    Path file = Files.writeString(dir.resolve("pw"), secret + "\n");
    CliRun fromFile = CliRun.run("inspect", "job", "--store", "postgres", "--user", "leases",
        "--url", "jdbc:postgresql://127.0.0.1:1/postgres?password=" + secret,
        "--password-file", file.toString());
    CliRun fromEnv = CliRun.run(Map.of(Secrets.ENV_VAR, secret), "inspect", "job",
        "--store", "redis", "--url", "redis://:" + secret + "@127.0.0.1:1");
    for (CliRun r : List.of(fromFile, fromEnv)) {
      assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.UNAVAILABLE);
      assertThat(r.out() + r.err()).doesNotContain(secret).contains("****");
    }
  }

  @Test
  void badCommandLinesAreUsageErrors() {
    CliRun unknownStore = CliRun.run("inspect", "job", "--store", "zookeeper", "--url", "x");
    assertThat(unknownStore.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(unknownStore.err()).contains("zookeeper", "postgres, redis, etcd, consul");

    CliRun missingUrl = CliRun.run("inspect", "job", "--store", "postgres");
    assertThat(missingUrl.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(missingUrl.err()).contains("needs --url");

    CliRun wrongOption = CliRun.run("inspect", "job", "--store", "postgres", "--url",
        PostgresServers.url(), "--key-prefix", "x");
    assertThat(wrongOption.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(wrongOption.err()).contains("--key-prefix");

    CliRun unknownCommand = CliRun.run("replay", "job");
    assertThat(unknownCommand.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(unknownCommand.err()).contains("replay");
    assertThat(CliRun.run().code()).isEqualTo(ExitCodes.USAGE);
    CliRun help = CliRun.run("--help");
    assertThat(help.code()).isZero();
    assertThat(help.out()).contains("Exit codes", "3", "store unavailable", Secrets.ENV_VAR,
        "history", "(etcd only)", "history not on");
  }
}
