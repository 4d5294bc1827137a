package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseState;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hash-tag safety on a real (single-node) Redis Cluster: {@code CLUSTER KEYSLOT} says every key of
 * a name is in one slot, and the scripts run there — a cluster node refuses a script whose keys
 * span slots with {@code CROSSSLOT}, so running them proves it too. (Redis 7.0 answers
 * {@code CLUSTER KEYSLOT} only with cluster support enabled, hence the dedicated server.)
 */
class RedisClusterSlotTest {

  private static final List<String> HOSTILE_NAMES = List.of("{", "}", "}{", "a}b{c", "{x}",
      "{}", "with space", "ünïcødé ✓ 漢字", "emoji 😀", "%7D", "a:b", "*?[]\\", "plain-name");

  private static RedisProcess node;
  private static RedisAdmin admin;

  @BeforeAll
  static void startCluster() throws Exception {
    node = RedisProcess.startClusterNode();
    admin = RedisAdmin.connect(node.uri());
    admin.sync().clusterAddSlots(IntStream.range(0, 16384).toArray());
    await().atMost(Duration.ofSeconds(20))
        .until(() -> admin.sync().clusterInfo().contains("cluster_state:ok"));
  }

  @AfterAll
  static void stop() {
    if (admin != null) {
      admin.close();
    }
    if (node != null) {
      node.close();
    }
  }

  @Test
  void everyKeyOfANameIsInOneSlot() {
    try (RedisLeaseStore layout = RedisLeaseStore.builder(node.uri()).keyPrefix("p:q").build()) {
      java.util.Set<String> tags = new java.util.HashSet<>();
      for (String n : HOSTILE_NAMES) {
        String lease = layout.keysOf(n).get(0);
        // the hash tag (up to the first '}') is the whole encoded name: no name can cut it short
        // and make two names share a tag, or a prefix "p" with name "q:x" look like "p:q" with "x"
        String tag = lease.substring(0, lease.indexOf('}') + 1);
        assertThat(lease).as(n).isEqualTo(tag + ":lease");
        assertThat(tags.add(tag)).as("tag of %s is unique", n).isTrue();
      }
      try (RedisLeaseStore shorter = RedisLeaseStore.builder(node.uri()).keyPrefix("p").build()) {
        assertThat(layout.keysOf("x").get(0)).isNotEqualTo(shorter.keysOf("q:x").get(0));
      }
      for (String n : HOSTILE_NAMES) {
        List<String> keys = layout.keysOf(n);
        long slot = admin.sync().clusterKeyslot(keys.get(0));
        for (String k : keys) {
          assertThat(admin.sync().clusterKeyslot(k)).as(k).isEqualTo(slot);
        }
        // and the slot is the tag's: the name inside is what is hashed, not the suffix
        assertThat(admin.sync().clusterKeyslot(keys.get(0).replace(":lease", ":anything")))
            .isEqualTo(slot);
      }
    }
  }

  @Test
  void fenceKeysShareTheResourceSlot() {
    List<String> resources = List.of("orders:state", "{orders}:state", "a{", "x{y", "{a}{b}",
        "ü{ñ}", "x", "{x}", "{x}:fence", "}a{b}", "emoji 😀");
    java.util.Set<String> fenceKeys = new java.util.HashSet<>();
    for (String k : resources) {
      String fenceKey = RedisFence.fenceKeyOf(k);
      assertThat(fenceKeys.add(fenceKey)).as("fence key of %s is its own", k).isTrue();
      assertThat(admin.sync().clusterKeyslot(fenceKey)).as(k)
          .isEqualTo(admin.sync().clusterKeyslot(k));
    }
  }

  @Test
  void theStoreWorksThroughAClusterClientForHostileNames() {
    RedisClusterClient client = RedisClusterClient.create(RedisURI.create(node.uri()));
    try (RedisLeaseStore store = RedisLeaseStore.builder(client).build();
        StatefulRedisClusterConnection<String, String> conn = client.connect()) {
      String suffix = UUID.randomUUID().toString();
      for (String base : HOSTILE_NAMES) {
        String n = base + suffix;
        HolderId a = HolderId.generate();
        long t1 = store.acquireOrRenew(n, a, Duration.ofSeconds(2)).orElseThrow().token();
        assertThat(store.inspect(n).status()).isEqualTo(LeaseState.Status.HELD);
        assertThat(store.token(n)).hasValue(t1);
        assertThat(store.release(n, a)).isTrue();
        long t2 = store.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(2))
            .orElseThrow().token();
        assertThat(t2).isGreaterThan(t1);
      }
      RedisFence fence = RedisFence.of(conn, Duration.ofSeconds(2));
      fence.set("orders:state", "v", 3);
      fence.set("{orders}:state", "v", 3);
      assertThat(fence.highestToken("orders:state")).hasValue(3);
      // a node refuses a script whose keys span slots (CROSSSLOT): these ran in one slot each
      String x = "twin-" + suffix;
      fence.set("{" + x + "}", "v", 100);
      fence.set(x, "v", 50);
      fence.hset("{" + x + "}:h", java.util.Map.of("f", "v"), 7);
      assertThat(fence.highestToken(x)).hasValue(50);
      assertThat(fence.highestToken("{" + x + "}")).hasValue(100);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  /**
   * A batch through a cluster client goes as one script per slot of its names (a node refuses a
   * script whose keys span slots with {@code CROSSSLOT}, so the batch succeeding proves the
   * grouping; the server's script count proves there is no more than one script per slot).
   */
  @Test
  void aBatchRunsOneScriptPerSlotOfItsNamesThroughAClusterClient() {
    RedisClusterClient client = RedisClusterClient.create(RedisURI.create(node.uri()));
    try (RedisLeaseStore store = RedisLeaseStore.builder(client).build()) {
      String suffix = UUID.randomUUID().toString();
      List<String> names = new java.util.ArrayList<>();
      HOSTILE_NAMES.forEach(n -> names.add(n + suffix));
      IntStream.range(0, 2000).forEach(i -> names.add("slot-batch-" + i + "-" + suffix));
      java.util.Set<Long> slots = new java.util.HashSet<>();
      for (String n : names) {
        slots.add(admin.sync().clusterKeyslot(store.keysOf(n).get(0)));
      }
      HolderId a = HolderId.generate();
      store.acquireOrRenew("warm-up-" + suffix, a, Duration.ofSeconds(2)); // loads the script
      long before = admin.scriptCalls();
      java.util.Map<String, dev.leases.AcquireResult> got =
          store.acquireOrRenewAll(names, a, Duration.ofSeconds(30));
      assertThat(admin.scriptCalls() - before).as("one script per slot").isEqualTo(slots.size());
      assertThat(slots.size()).as("some names share a slot").isLessThan(names.size());
      assertThat(got.keySet()).containsExactlyElementsOf(names);
      assertThat(got.values()).allMatch(r -> r instanceof dev.leases.AcquireResult.Granted);
      java.util.Map<String, dev.leases.AcquireResult> refused =
          store.acquireOrRenewAll(names, HolderId.generate(), Duration.ofSeconds(30));
      for (String n : names) {
        LeaseState.Held held = ((dev.leases.AcquireResult.Refused) refused.get(n)).heldBy()
            .orElseThrow();
        assertThat(held.holder()).isEqualTo(a);
        assertThat(held.lastToken()).isEqualTo(got.get(n).grant().orElseThrow().token());
      }
      assertThat(store.releaseAll(names, a).values()).containsOnly(true);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  @Test
  void aStoreOnAFreshClusterClientConnectsWithoutTheUserLoadingTheTopologyFirst() {
    RedisClusterClient client = RedisClusterClient.create(RedisURI.create(node.uri()));
    try (RedisLeaseStore store = RedisLeaseStore.builder(client).build()) {
      assertThat(store.acquireOrRenew("fresh-" + UUID.randomUUID(), HolderId.generate(),
          Duration.ofSeconds(2))).isPresent();
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  @Test
  void theRunLedgerKeepsEachJobInItsLeasesSlotThroughAClusterClient() {
    RedisClusterClient client = RedisClusterClient.create(RedisURI.create(node.uri()));
    try (RedisLeaseStore store = RedisLeaseStore.builder(client).keyPrefix("p:q").build();
        RedisRunLedger ledger = RedisRunLedger.builder(client).keyPrefix("p:q").build()) {
      String suffix = UUID.randomUUID().toString();
      java.util.Set<Long> slots = new java.util.HashSet<>();
      for (String base : HOSTILE_NAMES) {
        String job = base + suffix;
        long slot = admin.sync().clusterKeyslot(store.keysOf("once/" + job).get(0));
        for (String k : ledger.keysOf(job)) {
          assertThat(admin.sync().clusterKeyslot(k)).as(k).isEqualTo(slot);
        }
        slots.add(slot);
        // a node refuses a script whose keys span slots (CROSSSLOT): every ledger script runs here
        dev.leases.once.RunRecord failed = ledger.begin(job, "r", 1, HolderId.generate());
        ledger.fail(failed, "x");
        dev.leases.once.RunRecord done =
            ledger.complete(ledger.begin(job, "r", 2, HolderId.generate()), none -> {});
        assertThat(ledger.completion(job, "r")).contains(done);
        assertThat(ledger.history(job, 10)).hasSize(2);
      }
      assertThat(slots).as("jobs spread over slots").hasSizeGreaterThan(1);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
