package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.leader.LeaderLoop;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.CountingLeaseStore;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Pub/sub release hints are lost on disconnect; a follower must then still take over within
 * TTL + one poll interval, by sleeping only until the expiry it last read (here from the refusal,
 * which says until when the lease is held; an expiry read too late fails these tests).
 */
class RedisHintLossTest {

  private static final Duration TTL = Duration.ofMillis(1500);

  @Test
  void followerThatHearsNoHintsTakesOverWithinTtlPlusOnePollInterval() throws Exception {
    String uri = RedisServers.sharedUri();
    String name = "hint-loss-" + UUID.randomUUID();
    try (RedisLeaseStore leaderStore = RedisLeaseStore.builder(uri).build();
        RedisLeaseStore followerStore = RedisLeaseStore.builder(uri).build()) {
      assertHandoverBounded(leaderStore, new Deaf(followerStore), name);
    }
  }

  @Test
  void followerWhosePubSubConnectionWasKilledTakesOverWithinTtlPlusOnePollInterval()
      throws Exception {
    String uri = RedisServers.sharedUri();
    String name = "hint-killed-" + UUID.randomUUID();
    try (RedisLeaseStore leaderStore = RedisLeaseStore.builder(uri).build();
        RedisLeaseStore followerStore = RedisLeaseStore.builder(uri).build();
        RedisAdmin admin = RedisAdmin.connect(uri)) {
      assertHandoverBounded(leaderStore, followerStore, name,
          () -> admin.sync().clientKill(io.lettuce.core.KillArgs.Builder.typePubsub()));
    }
  }

  private static void assertHandoverBounded(LeaseStore leaderStore, LeaseStore followerStore,
      String name, Runnable... beforeRelease) throws Exception {
    try (LeaderLoop leader = LeaderLoop.builder(leaderStore, name).ttl(TTL).start()) {
      long t1 = leader.awaitLeadership(Duration.ofSeconds(10));
      assertThat(t1).isPositive();
      CountingLeaseStore counted = new CountingLeaseStore(followerStore);
      // no cap on the follower's sleep but the expiry it read: that alone must bound the takeover
      try (LeaderLoop follower = LeaderLoop.builder(counted, name).ttl(TTL)
          .followerMaxWait(Duration.ofMinutes(1)).start()) {
        // the follower has read the lease's expiry (from the refusal, which says until when)
        // and sleeps until then (or a hint)
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
            .until(() -> counted.expiryReads() > 0);
        assertThat(follower.currentToken()).isZero();
        for (Runnable r : beforeRelease) {
          r.run();
        }
        long releasedAt = System.nanoTime();
        leader.close();
        long t2 = follower.awaitLeadership(Duration.ofSeconds(20));
        Duration took = Duration.ofNanos(System.nanoTime() - releasedAt);
        assertThat(t2).isGreaterThan(t1);
        assertThat(took).as("takeover without a release hint")
            .isLessThanOrEqualTo(TTL.plus(follower.renewInterval()));
      }
    }
  }

  /**
   * The follower's store with its release hints lost, as on a dropped pub/sub connection; its
   * batches are the store's native ones (whose refusals say until when).
   */
  private static final class Deaf extends ForwardingLeaseStore {
    Deaf(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Map<String, AcquireResult> acquireOrRenewAll(Collection<String> names, HolderId holder,
        Duration ttl) {
      return delegate().acquireOrRenewAll(names, holder, ttl);
    }

    @Override
    public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
      return delegate().releaseAll(names, holder);
    }

    @Override
    public Subscription onRelease(String name, Runnable listener) {
      return () -> {};
    }
  }
}
