package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.FencedOutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;

class ConsulFenceTest {

  private static Consul client;
  private static KeyValueClient kv;
  private static ConsulFence fence;

  @BeforeAll
  static void open() {
    client = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false).build();
    kv = client.keyValueClient();
    fence = ConsulFence.of(client, Duration.ofSeconds(5));
  }

  @AfterAll
  static void close() {
    client.destroy();
  }

  private static String read(String key) {
    return kv.getValueAsString(key, StandardCharsets.UTF_8).orElse(null);
  }

  @Test
  void equalTokenWritesTwiceLowerIsRejectedUnchangedHigherWins() {
    String key = "fence-test/" + UUID.randomUUID() + "/state";
    fence.put(key, "first", 10);
    fence.put(key, "second", 10);
    assertThat(read(key)).isEqualTo("second");
    assertThat(fence.highestToken(key)).hasValue(10);

    long modify = kv.getValue(key).orElseThrow().getModifyIndex();
    assertThatThrownBy(() -> fence.put(key, "stale", 9))
        .isInstanceOfSatisfying(FencedOutException.class, e -> {
          assertThat(e.resource()).isEqualTo(key);
          assertThat(e.presentedToken()).isEqualTo(9);
          assertThat(e.highestToken()).isEqualTo(10);
        });
    assertThat(read(key)).isEqualTo("second");
    assertThat(kv.getValue(key).orElseThrow().getModifyIndex()).as("nothing written")
        .isEqualTo(modify);

    fence.put(key, "newer".getBytes(StandardCharsets.UTF_8), 11);
    assertThat(read(key)).isEqualTo("newer");
    assertThat(fence.highestToken(key)).hasValue(11);
    assertThatThrownBy(() -> fence.put(key, "old leader again", 10))
        .isInstanceOf(FencedOutException.class).hasMessageContaining("11");
    assertThat(read(key)).isEqualTo("newer");
  }

  @Test
  void racingWritersNeverLetALowerTokenOverwriteAHigherOne() throws Exception {
    String key = "fence-test/" + UUID.randomUUID();
    int writers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      for (int round = 0; round < 5; round++) {
        CyclicBarrier start = new CyclicBarrier(writers);
        List<Future<Boolean>> results = new ArrayList<>();
        long base = 100L * (round + 1);
        for (int w = 0; w < writers; w++) {
          long token = base + w;
          results.add(pool.submit(() -> {
            start.await(10, TimeUnit.SECONDS);
            try {
              fence.put(key, "by " + token, token);
              return true;
            } catch (FencedOutException e) {
              return false;
            }
          }));
        }
        int accepted = 0;
        for (Future<Boolean> f : results) {
          accepted += f.get(30, TimeUnit.SECONDS) ? 1 : 0;
        }
        long highest = base + writers - 1;
        assertThat(accepted).isBetween(1, writers);
        assertThat(fence.highestToken(key)).hasValue(highest);
        assertThat(read(key)).as("round %d", round).isEqualTo("by " + highest);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "  ", "/abs", "a/", "a//b", "a/../b", "..", "./a", " lead", "trail ",
      "a%20b", "a%2E%2Eb", "tab\there"})
  void keysConsulWouldRewriteOrRefuseAreRejected(String key) {
    assertThatThrownBy(() -> fence.put(key, "v", 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("resourceKey");
  }

  @ParameterizedTest
  @ValueSource(strings = {"orders/\uD800", "orders/\uDBFF", "\uDC00/state", "a\uD83D"})
  void keysThatAreNotWellFormedUtf16AreRejectedBeforeAnythingIsSent(String key) {
    // both unpaired surrogates would reach Consul as the same key ("orders/?")
    assertThatThrownBy(() -> fence.put(key, "v", 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("resourceKey")
        .hasMessageContaining("not well-formed UTF-16");
    assertThatThrownBy(() -> fence.highestToken(key))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not well-formed UTF-16");
  }

  /**
   * The fence keeps its token in the resource key's own Flags, so no resource key can equal
   * another's fence; but a resource key inside the lease store's prefix would be a fenced write onto
   * a lease's lock key (a plain PUT, which Consul accepts even while the key is locked).
   */
  @ParameterizedTest
  @ValueSource(strings = {"plain", "percent-encoded slash", "the prefix itself"})
  void keysInTheLeaseStoresNamespaceAreRefusedAndTheLeaseIsUntouched(String form)
      throws Exception {
    try (ConsulLeaseStore store = ConsulLeaseStore.builder(ConsulServers.sharedUrl()).build()) {
      String n = "fenced-" + UUID.randomUUID();
      dev.leases.HolderId h = dev.leases.HolderId.generate();
      long token = store.acquireOrRenew(n, h, Duration.ofSeconds(10)).orElseThrow().token();
      String leaseKey = store.keyOf(n);
      String key = switch (form) {
        case "plain" -> leaseKey;
        case "percent-encoded slash" -> leaseKey.replaceFirst("/", "%2F");
        default -> ConsulLeaseStore.DEFAULT_KEY_PREFIX;
      };
      String before = read(leaseKey);
      assertThatThrownBy(() -> fence.put(key, "overwritten", token))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("resourceKey")
          .hasMessageContaining("reserved");
      assertThat(read(leaseKey)).as("the lease's record is untouched").isEqualTo(before);
      assertThat(store.inspect(n).status()).isEqualTo(dev.leases.LeaseState.Status.HELD);
      assertThat(store.release(n, h)).isTrue();
    }
  }

  @Test
  void aFenceForAStoreWithItsOwnPrefixRefusesThatPrefix() {
    ConsulFence custom = ConsulFence.of(client, Duration.ofSeconds(5), "myapp/leases");
    assertThatThrownBy(() -> custom.put("myapp/leases/job", "v", 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
    String ok = "myapp/leases-not/" + UUID.randomUUID();
    custom.put(ok, "v", 1);
    assertThat(read(ok)).isEqualTo("v");
    assertThatThrownBy(() -> ConsulFence.of(client, Duration.ofSeconds(5), "bad//prefix"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
  }

  @Test
  void badInputSaysWhatToChange() {
    assertThatThrownBy(() -> fence.put("k", "v", 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive");
    assertThatThrownBy(() -> fence.put("k", (String) null, 1))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("value");
    assertThatThrownBy(() -> ConsulFence.of(client, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
    assertThat(fence.highestToken("fence-test/never-" + UUID.randomUUID())).isEmpty();
  }
}
