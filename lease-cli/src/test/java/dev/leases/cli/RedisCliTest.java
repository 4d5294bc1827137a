package dev.leases.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.redis.RedisLeaseStore;
import dev.leases.redis.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The CLI against a real local redis-server, run in-process, under a key prefix of its own. */
class RedisCliTest {

  private static final String PREFIX = "cli-test";
  private static RedisLeaseStore store;

  @BeforeAll
  static void start() {
    store = RedisLeaseStore.builder(RedisServers.sharedUri()).keyPrefix(PREFIX).build();
  }

  @AfterAll
  static void stop() {
    store.close();
  }

  private static String[] args(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--store", "redis", "--url", RedisServers.sharedUri(),
        "--key-prefix", PREFIX));
    return all.toArray(String[]::new);
  }

  private static CliRun cli(String... args) {
    return CliRun.run(args(args));
  }

  /** Redis keeps nothing of past tenures: {@code history} says so and points to etcd. */
  @Test
  void historyIsRefusedSayingRedisKeepsNoneAndEtcdDoes() {
    String n = "job-" + UUID.randomUUID();
    store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();
    CliRun.assertHistoryRefused(cli("history", n), "redis");
    CliRun.assertHistoryRefused(cli("history", n, "--json", "--limit", "5"), "redis");
  }

  @Test
  void inspectTokenAndForcedRelease() {
    String n = "job-" + UUID.randomUUID();
    LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();

    assertThat(cli("inspect", n, "--json").json().get("holder").asText())
        .isEqualTo(g.holder().value());
    assertThat(cli("token", n).out().trim()).isEqualTo(Long.toString(g.token()));

    CliRun r = cli("release", n, "--force");
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.out()).contains("released " + n, g.holder().value(), "token " + g.token());
    assertThat(store.inspect(n)).isInstanceOf(LeaseState.Free.class);
  }

  /**
   * Names held under the CLI's key prefix, in code-point order (a glob character in the prefix is
   * text); a released name is gone (Redis keeps nothing of it), as are names of another key
   * prefix.
   */
  @Test
  void listShowsTheHeldNamesWithThePrefixInCodePointOrder() {
    String prefix = "list-" + UUID.randomUUID() + "/";
    HolderId holder = HolderId.generate();
    for (String n : List.of("b", "a*", "a", "B", "released", "\uD83D\uDE00", "\uFF5E")) {
      store.acquireOrRenew(prefix + n, holder, Duration.ofMinutes(1)).orElseThrow();
    }
    store.release(prefix + "released", holder);
    try (RedisLeaseStore other = RedisLeaseStore.builder(RedisServers.sharedUri())
        .keyPrefix(PREFIX + "-other").build()) {
      other.acquireOrRenew(prefix + "other", holder, Duration.ofMinutes(1)).orElseThrow();

      CliRun r = cli("list", prefix, "--json");

      assertThat(r.code()).as(r.toString()).isZero();
      assertThat(r.jsonLines()).extracting(j -> j.get("name").asText() + " "
          + j.get("status").asText()).containsExactly(prefix + "B HELD", prefix + "a HELD",
              prefix + "a* HELD", prefix + "b HELD", prefix + "\uFF5E HELD",
              prefix + "\uD83D\uDE00 HELD");
      assertThat(cli("list", "--prefix", prefix + "a*").out().lines())
          .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
          .startsWith(prefix + "a*  HELD  token ");
      CliRun limited = cli("list", prefix, "--limit", "2", "--json");
      assertThat(limited.jsonLines()).extracting(j -> j.get("name").asText())
          .containsExactly(prefix + "B", prefix + "a");
    }
  }

  @Test
  void tokenOfANameNeverGrantedIsStillABoundAboveEveryTokenIssued() {
    // LeaseStore.token may answer a store-wide bound when it keeps no record: Redis does (its
    // clock in ms), so an operator can fence a resource even for a name it never saw.
    LeaseGrant other = store.acquireOrRenew("other-" + UUID.randomUUID(), HolderId.generate(),
        Duration.ofMinutes(1)).orElseThrow();
    CliRun r = cli("token", "never-" + UUID.randomUUID(), "--json");
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.json().get("token").asLong()).isGreaterThanOrEqualTo(other.token());
  }

  @Test
  void watchIsWokenByThePublishedReleaseAndSeesTheNextHolder() throws Exception {
    String n = "watch-" + UUID.randomUUID();
    HolderId first = HolderId.generate();
    store.acquireOrRenew(n, first, Duration.ofMinutes(10)).orElseThrow();
    CliRun.assertReleaseHintWakesWatch(n, List.of(args()), () -> store.release(n, first));
  }

  @Test
  void watchPollsAtTheExpiryItRead() throws Exception {
    String n = "expiry-" + UUID.randomUUID();
    store.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(5)).orElseThrow();
    // No release, so no hint: only the poll at the reported expiry shows EXPIRED before 60 s.
    CliRun r = CompletableFuture.supplyAsync(
        () -> cli("watch", n, "--json", "--interval", "60000", "--count", "2"))
        .get(45, TimeUnit.SECONDS);
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.jsonLines()).extracting(j -> j.get("status").asText())
        .containsExactly("HELD", "EXPIRED");
  }

  @Test
  void unreachableRedisFailsFastWithExit3() {
    long start = System.nanoTime();
    CliRun r = CliRun.run("watch", "job", "--store", "redis", "--url", "redis://127.0.0.1:1",
        "--timeout", "30000");
    assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.UNAVAILABLE);
    assertThat(r.err()).contains("127.0.0.1:1", "Connection refused", "Check --url");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
  }
}
