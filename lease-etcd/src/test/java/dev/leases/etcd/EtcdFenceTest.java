package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdFenceTest {

  private static Client client;
  private static EtcdFence fence;
  private static String prefix;

  @BeforeAll
  static void connect() {
    client = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "fence-" + HexFormat.of().formatHex(b);
    fence = new EtcdFence(client, prefix, Duration.ofSeconds(5));
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  private static String resource() {
    byte[] b = new byte[6];
    ThreadLocalRandom.current().nextBytes(b);
    return "data-" + prefix + "/" + HexFormat.of().formatHex(b);
  }

  private static String read(String key) throws Exception {
    GetResponse r = client.getKVClient().get(ByteSequence.from(key, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS);
    return r.getKvs().isEmpty() ? null : r.getKvs().get(0).getValue().toString(StandardCharsets.UTF_8);
  }

  @Test
  void equalTokenTwiceIsAcceptedLowerIsRejectedUnchangedHigherIsAccepted() throws Exception {
    String key = resource();
    assertThat(fence.highestToken(key)).isEmpty();
    long r1 = fence.write(key, 7, "first under 7");
    long r2 = fence.write(key, 7, "second under 7");
    assertThat(r2).isGreaterThan(r1);
    assertThat(read(key)).isEqualTo("second under 7");
    assertThat(fence.highestToken(key)).hasValue(7);

    assertThatThrownBy(() -> fence.write(key, 6, "stale"))
        .isInstanceOfSatisfying(FencedOutException.class, e -> {
          assertThat(e.resource()).isEqualTo(key);
          assertThat(e.presentedToken()).isEqualTo(6);
          assertThat(e.highestToken()).isEqualTo(7);
        })
        .hasMessageContaining("7");
    assertThat(read(key)).as("a rejected write changes nothing").isEqualTo("second under 7");
    assertThat(fence.highestToken(key)).hasValue(7);

    fence.write(key, 8, "under 8");
    assertThat(read(key)).isEqualTo("under 8");
    assertThat(fence.highestToken(key)).hasValue(8);
    assertThatThrownBy(() -> fence.write(key, 7, "stale again"))
        .isInstanceOf(FencedOutException.class);
    assertThat(read(key)).isEqualTo("under 8");
  }

  @Test
  void tokensCompareAsNumbersNotAsText() throws Exception {
    String key = resource();
    fence.write(key, 9, "nine");
    fence.write(key, 10, "ten"); // "10" < "9" as text
    assertThatThrownBy(() -> fence.write(key, 9, "nine again"))
        .isInstanceOf(FencedOutException.class);
    fence.write(key, Long.MAX_VALUE, "max");
    assertThatThrownBy(() -> fence.write(key, Long.MAX_VALUE - 1, "almost"))
        .isInstanceOf(FencedOutException.class);
    assertThat(read(key)).isEqualTo("max");
  }

  @Test
  void badArgumentsFailBeforeAnythingIsSent() {
    String key = resource();
    assertThatThrownBy(() -> fence.write(key, 0, "x")).hasMessageContaining("positive");
    assertThatThrownBy(() -> fence.write(key, -5, "x")).hasMessageContaining("positive");
    assertThatThrownBy(() -> fence.write("", 1, "x")).hasMessageContaining("key");
    assertThatThrownBy(() -> fence.write(key, 1, (String) null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void racingWritersNeverLetALowerTokenLandAfterAHigherOne() throws Exception {
    String key = resource();
    int threads = 8;
    int writesEach = 25;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    AtomicInteger rejected = new AtomicInteger();
    try {
      CyclicBarrier start = new CyclicBarrier(threads);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          for (int i = 0; i < writesEach; i++) {
            long token = 1 + ThreadLocalRandom.current().nextInt(100);
            try {
              fence.write(key, token, "t" + token + " by " + thread);
            } catch (FencedOutException e) {
              assertThat(e.highestToken()).isGreaterThan(token);
              rejected.incrementAndGet();
            }
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    long highest = fence.highestToken(key).orElseThrow();
    assertThat(read(key)).as("the value was written under the highest token")
        .startsWith("t" + highest + " by ");
    assertThat(rejected.get()).isPositive();
  }

  @Test
  void aSupersededLeaseHolderIsFencedOut() throws Exception {
    String key = resource();
    try (LeaseStore s = EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(prefix).build()) {
      String name = "job-" + key.substring(key.lastIndexOf('/') + 1);
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      LeaseGrant ga = s.acquireOrRenew(name, a, Duration.ofSeconds(2)).orElseThrow();
      fence.write(key, ga.token(), "a");
      assertThat(s.release(name, a)).isTrue();
      LeaseGrant gb = s.acquireOrRenew(name, b, Duration.ofSeconds(2)).orElseThrow();
      fence.write(key, gb.token(), "b");
      assertThatThrownBy(() -> fence.write(key, ga.token(), "a, late"))
          .isInstanceOf(FencedOutException.class);
      assertThat(read(key)).isEqualTo("b");
    }
  }

  // ---------------------------------------------------------------- reserved keys

  @Test
  void aFencedWriteCannotTargetTheStoresOwnKeysAndTheLeaseStillExpires() throws Exception {
    try (EtcdLeaseStore s = EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(prefix).build()) {
      String name = "job-" + resource().substring(resource().lastIndexOf('/') + 1);
      HolderId a = HolderId.generate();
      LeaseGrant g = s.acquireOrRenew(name, a, Duration.ofSeconds(1)).orElseThrow();
      KeyLayout keys = new KeyLayout(prefix);
      String other = resource();
      fence.write(other, 3, "guarded");
      for (ByteSequence k : List.of(keys.leaseKey(name), keys.lastKey(name), keys.fenceKey(other))) {
        String key = k.toString(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> fence.write(key, g.token(), "overwritten")).as(key)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("'" + prefix + "/'").hasMessageContaining("reserved");
        assertThatThrownBy(() -> fence.highestToken(key)).as(key)
            .isInstanceOf(IllegalArgumentException.class);
      }
      await("the lease expires: its key is still on its etcd lease")
          .atMost(g.ttl().plusSeconds(15)).pollInterval(Duration.ofMillis(50))
          .until(() -> s.inspect(name).status() != LeaseState.Status.HELD);
      assertThat(s.inspect(name)).isInstanceOf(LeaseState.Expired.class);
      assertThat(fence.highestToken(other)).hasValue(3);
      assertThat(read(other)).isEqualTo("guarded");
    }
  }

  @Test
  void aResourceNamedLikeAnotherResourcesFenceKeyCannotLowerThatFence() throws Exception {
    String key = resource();
    fence.write(key, 10, "ten");
    String fenceKeyOfKey = new KeyLayout(prefix).fenceKey(key).toString(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> fence.write(fenceKeyOfKey, 1, "0000000000000000001"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
    assertThatThrownBy(() -> fence.write(key, 5, "five, after ten"))
        .isInstanceOf(FencedOutException.class);
    assertThat(fence.highestToken(key)).hasValue(10);
    assertThat(read(key)).isEqualTo("ten");
  }

  @Test
  void unpairedSurrogatesInAResourceAreRefusedAndAQuestionMarkIsItsOwnResource() throws Exception {
    String base = resource();
    for (String bad : List.of(base + "c\uD800x", base + "c\uDC00x")) {
      assertThatThrownBy(() -> fence.write(bad, 1, "x")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.highestToken(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> new EtcdFence(client, "c\uD800x", Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
    fence.write(base + "c?x", 4, "question mark");
    assertThat(fence.highestToken(base + "c?x")).hasValue(4);
    assertThat(read(base + "c?x")).isEqualTo("question mark");
    fence.write(base + "c\uD83D\uDE00x", 2, "a paired surrogate is a character");
    assertThat(fence.highestToken(base + "c\uD83D\uDE00x")).hasValue(2);
  }
}
