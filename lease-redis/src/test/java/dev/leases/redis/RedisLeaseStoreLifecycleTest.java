package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class RedisLeaseStoreLifecycleTest {

  @Test
  void closeLeavesNoThreadsOfTheStoresOwnClient() {
    RedisServers.shared();
    Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
    RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build();
    String n = "threads-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    store.onRelease(n, () -> {});
    store.acquireOrRenew(n, a, Duration.ofSeconds(2)).orElseThrow();
    store.release(n, a);
    assertThat(newThreads(before)).as("the store did start threads").isNotEmpty();
    store.close();
    await().pollInSameThread().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
        assertThat(newThreads(before)).as("threads left after close").isEmpty());
    assertThatThrownBy(() -> store.inspect(n)).isInstanceOf(LeaseStoreClosedException.class);
  }

  /** Threads started since {@code before}, except Netty's shared global executor (a daemon). */
  private static Set<String> newThreads(Set<Thread> before) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> !before.contains(t) && t.isAlive())
        .filter(t -> !t.isDaemon() || !t.getName().startsWith("globalEventExecutor"))
        .map(t -> t.getName() + (t.isDaemon() ? " (daemon)" : ""))
        .collect(Collectors.toSet());
  }

  @Test
  void closingAStoreLeavesAUserSuppliedClientWorking() {
    RedisURI uri = RedisURI.create(RedisServers.sharedUri());
    RedisClient client = RedisClient.create(uri);
    try {
      String n = "user-client-" + UUID.randomUUID();
      try (RedisLeaseStore store = RedisLeaseStore.builder(client, uri).build()) {
        assertThat(store.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(2))).isPresent();
        store.onRelease(n, () -> {});
      }
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        assertThat(c.sync().ping()).isEqualTo("PONG");
      }
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  @Test
  void factoryOpensAStoreFromSettingsAndNamesBadOnes() {
    RedisLeaseStoreFactory f = new RedisLeaseStoreFactory();
    String n = "factory-" + UUID.randomUUID();
    try (LeaseStore s = f.open(Map.of("uri", RedisServers.sharedUri(), "keyPrefix", "factory",
        "commandTimeoutMs", "1500"))) {
      assertThat(s.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(2))).isPresent();
      assertThat(((RedisLeaseStore) s).keysOf(n).get(0)).startsWith("{factory:");
      assertThat(((RedisLeaseStore) s).commandTimeout()).isEqualTo(Duration.ofMillis(1500));
    }
    assertThatThrownBy(() -> f.open(Map.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'uri'");
    assertThatThrownBy(() -> f.open(Map.of("uri", "redis://127.0.0.1:1", "keyprefix", "x")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyprefix");
    assertThatThrownBy(() -> f.open(Map.of("uri", "redis://127.0.0.1:1", "commandTimeoutMs",
        "2s"))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("milliseconds");
    assertThatThrownBy(() -> f.open(Map.of("uri", "redis://127.0.0.1:1", "keyPrefix", "a b")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
  }
}
