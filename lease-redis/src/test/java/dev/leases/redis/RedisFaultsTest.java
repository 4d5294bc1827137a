package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.TcpProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Faults on the server or the network path, on dedicated servers and proxies. */
class RedisFaultsTest {

  private static final Duration TTL = Duration.ofMillis(1500);
  private static final Duration TIMEOUT = Duration.ofMillis(500);
  /** What "within the timeout" allows on top of it for scheduling on a busy 2-core machine. */
  private static final Duration SLACK = Duration.ofMillis(1500);

  @Test
  void restartOfANonPersistentServerWhileALeaseIsHeldNeverGivesASmallerToken() throws Exception {
    try (RedisProcess redis = RedisProcess.start();
        RedisLeaseStore store = RedisLeaseStore.builder(redis.uri()).commandTimeout(TIMEOUT)
            .build()) {
      String held = "held-" + UUID.randomUUID();
      String churned = "churned-" + UUID.randomUUID();
      List<Long> before = new ArrayList<>();
      HolderId leader = HolderId.generate();
      before.add(store.acquireOrRenew(held, leader, Duration.ofSeconds(30)).orElseThrow().token());
      for (int i = 0; i < 50; i++) { // many grants in a burst: the counter runs ahead of INCR
        HolderId h = HolderId.generate();
        before.add(store.acquireOrRenew(churned, h, TTL).orElseThrow().token());
        assertThat(store.release(churned, h)).isTrue();
      }

      redis.kill();
      assertThatThrownBy(() -> store.acquireOrRenew(held, leader, TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      redis.startAgain();

      // every record is gone, yet the bound answered still fences every token issued before
      long highest = Collections.max(before);
      LeaseState churnedState = await().atMost(Duration.ofSeconds(20))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> store.inspect(churned), st -> true);
      assertThat(churnedState.lastToken()).as("inspect's bound after the restart")
          .isGreaterThanOrEqualTo(highest);
      assertThat(store.token(held).orElse(0)).as("token(name) after the restart")
          .isGreaterThanOrEqualTo(highest);

      // the held lease vanished with the server's memory: a newcomer gets it, with a larger token
      HolderId newcomer = HolderId.generate();
      LeaseGrant taken = await().atMost(Duration.ofSeconds(20))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> store.acquireOrRenew(held, newcomer, TTL), Optional::isPresent)
          .orElseThrow();
      List<Long> after = new ArrayList<>();
      after.add(taken.token());
      assertThat(store.acquireOrRenew(held, leader, TTL)).as("old leader refused").isEmpty();
      for (int i = 0; i < 5; i++) {
        HolderId h = HolderId.generate();
        after.add(store.acquireOrRenew(churned, h, TTL).orElseThrow().token());
        store.release(churned, h);
      }
      after.add(store.acquireOrRenew("fresh-" + UUID.randomUUID(), HolderId.generate(), TTL)
          .orElseThrow().token());
      assertThat(Collections.min(after)).isGreaterThan(Collections.max(before));
    }
  }

  @Test
  void aStalledConnectionFailsWithinTheTimeoutAndTheLeaseIsTakenMeanwhile() throws Exception {
    String shared = RedisServers.sharedUri();
    int port = Integer.parseInt(shared.substring(shared.lastIndexOf(':') + 1));
    try (TcpProxy proxy = new TcpProxy(port);
        RedisLeaseStore partitioned = RedisLeaseStore.builder("redis://127.0.0.1:" + proxy.port())
            .commandTimeout(TIMEOUT).build();
        RedisLeaseStore healthy = RedisLeaseStore.builder(shared).build()) {
      String n = "stall-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      long t1 = partitioned.acquireOrRenew(n, a, TTL).orElseThrow().token();

      proxy.stall();
      long start = System.nanoTime();
      assertThatThrownBy(() -> partitioned.acquireOrRenew(n, a, TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("outcome is unknown");
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
      assertThatThrownBy(() -> partitioned.inspect(n))
          .isInstanceOf(LeaseStoreUnavailableException.class);

      // the partition outlasts the TTL: the store's clock expires the lease, someone else takes it
      HolderId b = HolderId.generate();
      long t2 = await().atMost(Duration.ofSeconds(10))
          .until(() -> healthy.acquireOrRenew(n, b, TTL), Optional::isPresent).orElseThrow().token();
      assertThat(t2).isGreaterThan(t1);

      proxy.forward();
      // the stalled renewal arrives late and changes nothing; the old holder is refused
      await().atMost(Duration.ofSeconds(10))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> partitioned.acquireOrRenew(n, a, TTL), Optional::isEmpty);
      assertThat(partitioned.release(n, a)).isFalse();
      assertThat(partitioned.inspect(n)).isInstanceOfSatisfying(LeaseState.Held.class,
          h -> assertThat(h.holder()).isEqualTo(b));
      assertThat(healthy.acquireOrRenew(n, b, TTL).orElseThrow().token()).isEqualTo(t2);
    }
  }

  @Test
  void aCutConnectionFailsFastAndRecoversAfterTheLeaseWasTaken() throws Exception {
    String shared = RedisServers.sharedUri();
    int port = Integer.parseInt(shared.substring(shared.lastIndexOf(':') + 1));
    try (TcpProxy proxy = new TcpProxy(port);
        RedisLeaseStore partitioned = RedisLeaseStore.builder("redis://127.0.0.1:" + proxy.port())
            .commandTimeout(TIMEOUT).build();
        RedisLeaseStore healthy = RedisLeaseStore.builder(shared).build()) {
      String n = "cut-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      long t1 = partitioned.acquireOrRenew(n, a, TTL).orElseThrow().token();

      proxy.cut();
      long start = System.nanoTime();
      assertThatThrownBy(() -> partitioned.acquireOrRenew(n, a, TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isLessThanOrEqualTo(TIMEOUT.plus(SLACK));

      HolderId b = HolderId.generate();
      long t2 = await().atMost(Duration.ofSeconds(10))
          .until(() -> healthy.acquireOrRenew(n, b, TTL), Optional::isPresent).orElseThrow().token();
      assertThat(t2).isGreaterThan(t1);
      // still cut after the TTL: every call keeps failing within the timeout, none hangs
      for (int i = 0; i < 3; i++) {
        long s = System.nanoTime();
        assertThatThrownBy(() -> partitioned.inspect(n))
            .isInstanceOf(LeaseStoreUnavailableException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - s)).isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
      }

      proxy.forward();
      await().atMost(Duration.ofSeconds(15))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> partitioned.acquireOrRenew(n, a, TTL), Optional::isEmpty);
      assertThat(partitioned.release(n, a)).isFalse();
    }
  }

  @Test
  void anUnreachableServerFailsWithinTheTimeout() {
    int closedPort = dev.leases.tck.servers.FreePorts.pick();
    try (RedisLeaseStore store = RedisLeaseStore.builder("redis://127.0.0.1:" + closedPort)
        .commandTimeout(TIMEOUT).build()) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> store.acquireOrRenew("x", HolderId.generate(), TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("127.0.0.1:" + closedPort);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
      // release hints are best effort: subscribing while the server is down does not throw
      store.onRelease("x", () -> {}).close();
    }
  }
}
