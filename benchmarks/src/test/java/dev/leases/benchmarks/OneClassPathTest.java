package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * lease-etcd (jetcd, gRPC, Vert.x 5) and lease-redis (Lettuce 7) on one class path, as in the
 * harness's jar: one Netty line for both, and both stores working side by side in one JVM.
 */
class OneClassPathTest {

  @Test
  @Timeout(120)
  void etcdAndRedisStoresWorkTogetherInOneJvm() throws Exception {
    Map<String, String> nettyVersions = io.netty.util.Version.identify().values().stream()
        .collect(Collectors.toMap(io.netty.util.Version::artifactId,
            io.netty.util.Version::artifactVersion));
    assertThat(nettyVersions).as("Netty artifacts on the class path").isNotEmpty();
    assertThat(nettyVersions.values()).as("one Netty version for all artifacts: %s", nettyVersions)
        .allMatch(v -> v.equals(nettyVersions.values().iterator().next()))
        .allMatch(v -> v.startsWith("4.2."));

    BenchOptions options = BenchOptions.parse(new String[] {"--backends", "redis,etcd",
        "--start-local"});
    try (Backend redis = Backends.find("redis").orElseThrow().start(options);
        Backend etcd = Backends.find("etcd").orElseThrow().start(options);
        LeaseStore redisStore = redis.openStore();
        LeaseStore etcdStore = etcd.openStore()) {
      String name = "one-class-path-" + UUID.randomUUID();
      HolderId holder = HolderId.generate();
      Duration ttl = Duration.ofSeconds(5);
      LeaseGrant onRedis = redisStore.acquireOrRenew(name, holder, ttl).orElseThrow();
      LeaseGrant onEtcd = etcdStore.acquireOrRenew(name, holder, ttl).orElseThrow();
      assertThat(redisStore.acquireOrRenew(name, holder, ttl).orElseThrow().token())
          .isEqualTo(onRedis.token());
      assertThat(etcdStore.acquireOrRenew(name, holder, ttl).orElseThrow().token())
          .isEqualTo(onEtcd.token());
      assertThat(redisStore.release(name, holder)).isTrue();
      assertThat(etcdStore.release(name, holder)).isTrue();
    }
  }
}
