package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import dev.leases.tck.ReferenceFencedResource;
import dev.leases.tck.servers.TcpProxy;
import dev.leases.tck.CountingLeaseStore;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.kiwiproject.consul.Consul;

/** Faults on the network path or the server, on proxies and dedicated agents. */
class ConsulFaultsTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration CALL_TIMEOUT = Duration.ofMillis(500);

  private static int sharedPort() {
    return URI.create(ConsulServers.sharedUrl()).getPort();
  }

  /**
   * A leader whose agent becomes unreachable (connections cut, or a silent partition) stands down
   * on its own, before Consul lets another holder in; the other takes over once Consul invalidates
   * the session, and the old leader's token is fenced out.
   */
  @ParameterizedTest
  @ValueSource(strings = {"cut", "stall"})
  void aLeaderCutOffFromItsAgentStandsDownBeforeAnotherTakesOver(String fault) throws Exception {
    String n = "partition-" + fault + "-" + UUID.randomUUID();
    ReferenceFencedResource<String> resource = new ReferenceFencedResource<>(n);
    AtomicLong lostAt = new AtomicLong();
    AtomicLong followerAcquiredAt = new AtomicLong();
    List<LossReason> reasons = Collections.synchronizedList(new ArrayList<>());
    try (TcpProxy proxy = new TcpProxy(sharedPort());
        ConsulLeaseStore partitioned = ConsulLeaseStore.builder("http://127.0.0.1:" + proxy.port())
            .callTimeout(CALL_TIMEOUT).build();
        CountingLeaseStore bStore = new CountingLeaseStore(
            ConsulLeaseStore.builder(ConsulServers.sharedUrl()).build());
        LeaderLoop a = LeaderLoop.builder(partitioned, n).ttl(TTL).listener(new LeaderListener() {
          @Override
          public void lost(String name, long token, LossReason reason) {
            reasons.add(reason);
            lostAt.compareAndSet(0, System.nanoTime());
          }
        }).build();
        LeaderLoop b = LeaderLoop.builder(bStore, n).ttl(TTL).listener(new LeaderListener() {
          @Override
          public void acquired(String name, long token) {
            followerAcquiredAt.compareAndSet(0, System.nanoTime());
          }
        }).build()) {
      a.start();
      long ta = a.awaitLeadership(Duration.ofSeconds(10));
      assertThat(ta).isPositive();
      resource.write(ta, "a-1");
      b.start();
      await("b has read the lease's expiry").atMost(Duration.ofSeconds(5))
          .until(() -> bStore.expiryReads() > 0);
      assertThat(b.currentToken()).isZero();

      if (fault.equals("cut")) {
        proxy.cut();
      } else {
        proxy.stall();
        long s = System.nanoTime();
        assertThatThrownBy(() -> partitioned.inspect(n))
            .isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("outcome is unknown");
        assertThat(Duration.ofNanos(System.nanoTime() - s)).as("a call is bounded by its timeout")
            .isLessThan(CALL_TIMEOUT.plusSeconds(2));
      }

      long tb = b.awaitLeadership(TTL.multipliedBy(2).plusSeconds(10));
      assertThat(tb).as("b takes over once Consul invalidates a's session").isGreaterThan(ta);
      await().atMost(Duration.ofSeconds(5)).until(() -> followerAcquiredAt.get() != 0);
      assertThat(lostAt.get()).as("a stood down").isNotZero();
      assertThat(lostAt.get() - followerAcquiredAt.get()).as("a stood down before b led")
          .isNegative();
      assertThat(reasons.get(0)).isIn(LossReason.RENEWAL_FAILED, LossReason.LOCAL_DEADLINE);
      assertThat(a.currentToken()).isZero();

      resource.write(tb, "b-1");
      assertThatThrownBy(() -> resource.write(ta, "a-late")).isInstanceOf(FencedOutException.class);

      proxy.forward();
      // the partition heals: whatever a's store sent meanwhile changes nothing, a stays follower
      await().atMost(Duration.ofSeconds(10))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> partitioned.inspect(n) instanceof LeaseState.Held h && h.lastToken() == tb);
      assertThat(a.currentToken()).isZero();
      assertThat(b.currentToken()).isEqualTo(tb);
      assertThat(resource.acceptedWrites()).extracting(ReferenceFencedResource.Write::value)
          .containsExactly("a-1", "b-1");
    }
  }

  @Test
  void restartOfAServerWithADataDirectoryKeepsTokensIncreasing() throws Exception {
    try (ConsulProcess server = ConsulProcess.persistentServer();
        ConsulLeaseStore s = ConsulLeaseStore.builder(server.url()).build()) {
      Consul admin = Consul.builder().withUrl(server.url()).withPing(false).build();
      try {
        String held = "held-" + UUID.randomUUID();
        String churned = "churned-" + UUID.randomUUID();
        String deleted = "deleted-" + UUID.randomUUID();
        HolderId leader = HolderId.generate();
        List<Long> before = new ArrayList<>();
        LeaseGrant heldGrant = s.acquireOrRenew(held, leader, Duration.ofSeconds(30)).orElseThrow();
        before.add(heldGrant.token());
        for (int i = 0; i < 10; i++) {
          HolderId h = HolderId.generate();
          before.add(s.acquireOrRenew(churned, h, TTL).orElseThrow().token());
          assertThat(s.release(churned, h)).isTrue();
        }
        before.add(s.acquireOrRenew(deleted, HolderId.generate(), TTL).orElseThrow().token());
        admin.keyValueClient().deleteKey(s.keyOf(deleted));

        server.restart();

        // the held tenure survived: Consul keeps sessions and locks in its Raft state
        LeaseGrant renewed = await().atMost(Duration.ofSeconds(30))
            .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
            .until(() -> s.acquireOrRenew(held, leader, Duration.ofSeconds(30)),
                Optional::isPresent).orElseThrow();
        assertThat(renewed.token()).as("same tenure, same token").isEqualTo(heldGrant.token());

        List<Long> after = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
          HolderId h = HolderId.generate();
          after.add(s.acquireOrRenew(churned, h, TTL).orElseThrow().token());
          s.release(churned, h);
        }
        after.add(s.acquireOrRenew(deleted, HolderId.generate(), TTL).orElseThrow().token());
        after.add(s.acquireOrRenew("fresh-" + UUID.randomUUID(), HolderId.generate(), TTL)
            .orElseThrow().token());
        assertThat(Collections.min(after)).isGreaterThan(Collections.max(before));
        assertThat(s.token(churned)).hasValue(after.get(2));
      } finally {
        admin.destroy();
      }
    }
  }

  @Test
  void aServerWithTheDefaultSessionTtlMinRefusesShortTtlsAndSaysSo() throws Exception {
    try (ConsulProcess agent = ConsulProcess.devAgent(false);
        ConsulLeaseStore s = ConsulLeaseStore.builder(agent.url()).build()) {
      String n = "ttl-min-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      assertThatThrownBy(() -> s.acquireOrRenew(n, a, Duration.ofSeconds(2)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("session_ttl_min")
          .hasMessageContaining("10s")
          .hasMessageContaining("ttl");
      assertThat(RawHttp.get(agent.url(), "/v1/kv/" + s.keyOf(n))).as("nothing was written")
          .isNull();
      assertThat(s.inspect(n).status()).isEqualTo(LeaseState.Status.FREE);
      assertThat(s.acquireOrRenew(n, a, Duration.ofSeconds(10))).isPresent();
      assertThat(s.release(n, a)).isTrue();
    }
  }
}
