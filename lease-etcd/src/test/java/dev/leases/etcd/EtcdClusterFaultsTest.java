package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import dev.leases.tck.process.LeaderProcess;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.CountingLeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults of a real three-member etcd cluster on loopback, started by each test with etcd's default
 * timing (100 ms heartbeat, 1 s election timeout): the Raft leader dies while a lease is held, and a
 * holder is cut off from the cluster for longer than its TTL.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class EtcdClusterFaultsTest {

  private static final Duration TTL = Duration.ofSeconds(4);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private EtcdCluster cluster;
  private String prefix;

  @BeforeEach
  void startCluster() throws Exception {
    cluster = EtcdCluster.start(3, 100, 1000);
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "faults-" + HexFormat.of().formatHex(b);
  }

  @AfterEach
  void stopCluster() {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      try {
        closeables.get(i).close();
      } catch (Exception e) {
        // the test's assertions decide
      }
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private LeaseStore store(List<String> endpoints) {
    LeaseStore s = EtcdLeaseStore.builder(endpoints.toArray(String[]::new)).keyPrefix(prefix)
        .callTimeout(Duration.ofSeconds(2)).build();
    closeables.add(s);
    return s;
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  /** A loop that records its events with the monotonic time they happened at. */
  private static final class Recorder implements LeaderListener {
    final List<String> events = new CopyOnWriteArrayList<>();
    volatile long lostAtNanos;
    volatile long acquiredAtNanos;

    @Override
    public void acquired(String name, long token) {
      acquiredAtNanos = System.nanoTime();
      events.add("acquired " + token);
    }

    @Override
    public void lost(String name, long token, LossReason reason) {
      lostAtNanos = System.nanoTime();
      events.add("lost " + token + " " + reason);
    }

    @Override
    public void tokenAdvanced(String name, long oldToken, long newToken) {
      events.add("advanced " + oldToken + " " + newToken);
    }
  }

  @Test
  void serverMinimumTtlIsReportedInTheGrant() {
    // With a 1 s election timeout etcd's minimum lease TTL is ceil(1.5 s) = 2 s.
    LeaseStore s = store(cluster.endpoints());
    String name = "raised-" + prefix;
    LeaseGrant g = s.acquireOrRenew(name, HolderId.generate(), Duration.ofSeconds(1)).orElseThrow();
    assertThat(g.ttl()).as("TTL granted for a 1 s request").isEqualTo(Duration.ofSeconds(2));
    LeaseState.Held held = (LeaseState.Held) s.inspect(name);
    assertThat(held.remaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void killingTheEtcdLeaderLosesNoLeaseAndAHolderKillHandsOverWithALargerToken()
      throws Exception {
    String name = "leader-kill-" + prefix;
    StoreRecipe recipe = new StoreRecipe(EtcdLeaseStoreFactory.class, Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, String.join(",", cluster.endpoints()),
        EtcdLeaseStoreFactory.KEY_PREFIX, prefix,
        EtcdLeaseStoreFactory.CALL_TIMEOUT_MS, "2000"));
    LeaderProcess holder = closeLater(
        LeaderProcess.start(recipe, name, TTL, TTL.dividedBy(3)));
    String acquired = holder.awaitLine("ACQUIRED ", 0, Duration.ofSeconds(60));
    long token = Long.parseLong(acquired.substring("ACQUIRED ".length()).trim());

    Recorder followerEvents = new Recorder();
    LeaderLoop follower = closeLater(LeaderLoop.builder(store(cluster.endpoints()), name).ttl(TTL)
        .listener(followerEvents).build());
    follower.start();
    LeaseStore probe = store(cluster.endpoints());
    assertThat(probe.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
        h -> assertThat(h.lastToken()).isEqualTo(token));

    EtcdCluster.Member etcdLeader = await("the cluster has a leader").atMost(Duration.ofSeconds(30))
        .until(() -> cluster.leader().orElse(null), m -> m != null);
    long killedAt = System.nanoTime();
    cluster.kill(etcdLeader);

    // Three TTLs: without renewals through the survivors the lease would be gone by then, even
    // with the new leader's extension (election timeout) added.
    Duration window = TTL.multipliedBy(3);
    await("the follower never leads while the holder renews through the survivors")
        .during(window).atMost(window.plusSeconds(10)).pollInterval(Duration.ofMillis(50))
        .until(() -> follower.currentToken() == 0 && followerEvents.events.isEmpty());
    EtcdCluster.Member newLeader = await("a new etcd leader").atMost(Duration.ofSeconds(30))
        .until(() -> cluster.leader().orElse(null), m -> m != null);
    assertThat(newLeader).isNotSameAs(etcdLeader);
    LeaseState afterFailover = await("the lease is readable after the failover")
        .atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> probe.inspect(name), st -> true);
    assertThat(afterFailover).as("state %s after the etcd leader was killed %d ms ago", afterFailover,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt))
        .isInstanceOfSatisfying(LeaseState.Held.class, h -> assertThat(h.lastToken()).isEqualTo(token));
    List<String> transcript = holder.transcript();
    assertThat(transcript).as("the holder's tokens").filteredOn(l -> l.startsWith("ACQUIRED ")
        || l.startsWith("ADVANCED ")).allMatch(l -> l.equals("ACQUIRED " + token));

    long holderKilledAt = System.nanoTime();
    holder.signal("KILL");
    long next = follower.awaitLeadership(TTL.plusSeconds(15));
    assertThat(next).as("the follower's token after the holder died").isGreaterThan(token);
    System.out.printf("etcd leader kill: holder transcript %s; follower took over %d ms after"
            + " the holder was killed%n", transcript,
        TimeUnit.NANOSECONDS.toMillis(followerEvents.acquiredAtNanos - holderKilledAt));
  }

  @Test
  void holderCutOffFromTheClusterStandsDownBeforeAnotherTakesOver() throws Exception {
    String name = "partition-" + prefix;
    EtcdCluster.Member etcdLeader = await("the cluster has a leader").atMost(Duration.ofSeconds(30))
        .until(() -> cluster.leader().orElse(null), m -> m != null);
    EtcdCluster.Member isolated = cluster.members().stream().filter(m -> m != etcdLeader)
        .findFirst().orElseThrow();
    List<String> others = cluster.members().stream().filter(m -> m != isolated)
        .map(EtcdCluster.Member::endpoint).toList();

    Recorder aEvents = new Recorder();
    LeaderLoop a = closeLater(LeaderLoop.builder(store(List.of(isolated.endpoint())), name).ttl(TTL)
        .listener(aEvents).build());
    a.start();
    long ta = a.awaitLeadership(Duration.ofSeconds(30));
    assertThat(ta).isPositive();
    Recorder bEvents = new Recorder();
    CountingLeaseStore bStore = new CountingLeaseStore(store(others));
    LeaderLoop b = closeLater(LeaderLoop.builder(bStore, name).ttl(TTL)
        .listener(bEvents).build());
    b.start();
    LeaseStore probe = store(others);
    await("b has read the lease's expiry").atMost(Duration.ofSeconds(10))
        .until(() -> bStore.expiryReads() > 0);
    assertThat(b.currentToken()).isZero();
    assertThat(probe.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
        h -> assertThat(h.lastToken()).isEqualTo(ta));

    cluster.stop(isolated);
    long tb = b.awaitLeadership(TTL.multipliedBy(2).plusSeconds(15));
    assertThat(tb).as("b takes over while a's only member is stopped").isGreaterThan(ta);
    assertThat(a.currentToken()).as("a has stood down").isZero();
    assertThat(aEvents.events).as("a's events").anyMatch(e -> e.startsWith("lost " + ta + " "));
    // Listener callbacks run on a pool after the loop's own state changes: wait for b's.
    await("b's acquired callback").atMost(Duration.ofSeconds(10))
        .until(() -> bEvents.acquiredAtNanos != 0);
    assertThat(aEvents.lostAtNanos).as("a stood down before b took over")
        .isLessThan(bEvents.acquiredAtNanos);
    assertThat(probe.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
        h -> assertThat(h.lastToken()).isEqualTo(tb));

    cluster.resume(isolated);
    await("a stays a follower after its member returns").during(TTL).atMost(TTL.plusSeconds(10))
        .until(() -> a.currentToken() == 0 && b.currentToken() == tb);
    System.out.printf("partition: a lost %d ms before b acquired; a's events %s%n",
        TimeUnit.NANOSECONDS.toMillis(bEvents.acquiredAtNanos - aEvents.lostAtNanos), aEvents.events);
  }
}
