package dev.leases.tck.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.tck.servers.LocalClusters.ConsulCluster;
import dev.leases.tck.servers.LocalClusters.EtcdCluster;
import dev.leases.tck.servers.LocalClusters.Member;
import dev.leases.tck.servers.LocalClusters.RaftCluster;
import dev.leases.tck.servers.LocalClusters.RedisPair;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The replicated local servers the nemesis breaks, against the installed binaries. */
class LocalClustersTest {

  @Test
  @Timeout(180)
  void anEtcdClusterElectsANewLeaderWhenItsLeaderIsKilledAndTakesItBack() throws Exception {
    try (EtcdCluster c = EtcdCluster.start(3, 50, 500)) {
      assertThat(c.endpoints().split(",")).hasSize(3);
      killAndRestartTheLeader(c);
    }
  }

  @Test
  @Timeout(240)
  void aConsulClusterElectsANewLeaderWhenItsLeaderIsKilledAndTakesItBack() throws Exception {
    try (ConsulCluster c = ConsulCluster.start(3)) {
      killAndRestartTheLeader(c);
    }
  }

  private static void killAndRestartTheLeader(RaftCluster c) throws Exception {
    Member old = await().atMost(Duration.ofSeconds(60)).until(c::leader, Optional::isPresent)
        .orElseThrow();
    old.kill();
    assertThat(old.isAlive()).isFalse();
    Member next = await().atMost(Duration.ofSeconds(60))
        .until(c::leader, l -> l.isPresent() && l.get() != old).orElseThrow();
    assertThat(next).isNotSameAs(old);
    c.restart(old);
    assertThat(old.isAlive()).isTrue();
    await().atMost(Duration.ofSeconds(60)).until(c::leader, Optional::isPresent);
  }

  @Test
  @Timeout(120)
  void aPromotedRedisReplicaHasTheDataTheVirtualIpMovesToItAndARestartedPrimaryIsEmpty() throws Exception {
    try (RedisPair p = RedisPair.start()) {
      int vip = p.vip().port();
      assertThat(RedisPair.command(vip, "SET", "k", "v")).isEqualTo("+OK");
      Member primary = p.primary();
      Member replica = p.replica();
      await().atMost(Duration.ofSeconds(30))
          .until(() -> "v".equals(RedisPair.command(replica.port(), "GET", "k")));

      p.promote();

      assertThat(primary.isAlive()).isFalse();
      assertThat(p.primary()).isSameAs(replica);
      assertThat(p.vip().targetPort()).isEqualTo(replica.port());
      assertThat(RedisPair.command(vip, "GET", "k")).isEqualTo("v");
      assertThat(RedisPair.command(vip, "SET", "k2", "v2")).as("writable").isEqualTo("+OK");

      p.rejoin();

      assertThat(p.replica()).isSameAs(primary);
      assertThat(RedisPair.command(primary.port(), "INFO", "replication"))
          .contains("role:slave");
      await().atMost(Duration.ofSeconds(30))
          .until(() -> "v2".equals(RedisPair.command(primary.port(), "GET", "k2")));

      Member current = p.primary();
      p.restartPrimary(0);

      assertThat(p.primary()).isSameAs(current);
      assertThat(RedisPair.command(vip, "GET", "k2")).as("restarted empty").isNull();
      p.awaitInSync(Duration.ofSeconds(30));
      assertThat(RedisPair.command(p.replica().port(), "DBSIZE")).as("resynchronised to empty")
          .isEqualTo(":0");
    }
  }
}
