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
