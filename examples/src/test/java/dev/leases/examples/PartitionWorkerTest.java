package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.postgres.JdbcFence;
import dev.leases.postgres.PostgresLeaseStore;
import dev.leases.postgres.PostgresServers;
import dev.leases.tck.process.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three {@link PartitionWorker} JVMs share twelve partitions on the test PostgreSQL; one is killed
 * with SIGKILL (no release) and its partitions move to the two others, whose fenced writes then
 * shut out its old tokens. Ownership is read from the store ({@code inspect}), not from the
 * workers.
 */
class PartitionWorkerTest {

  private static final int PARTITIONS = 12;
  private static final int MAX_WORKERS = 8;
  private static final Duration TTL = Duration.ofSeconds(3);

  private final String topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
  private final List<ChildJvm> workers = new ArrayList<>();

  @AfterEach
  void stopWorkers() {
    for (ChildJvm w : workers) {
      System.out.println("worker " + w.pid() + " printed " + w.transcript()); // kept in the report
      w.close();
    }
  }

  @Test
  @Timeout(240)
  void partitionsAreSharedOutAndACrashedWorkersMoveToTheOthersWithinTheTtl() throws Exception {
    try (HikariDataSource pool = PostgresServers.pool(2);
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build()) {
      for (int k = 0; k < 3; k++) {
        Path log = Files.createTempFile("partition-worker-" + k + "-", ".log");
        workers.add(ChildJvm.start(PartitionWorker.class, List.of(PostgresServers.url(),
            Integer.toString(k), topic, Integer.toString(PARTITIONS),
            Integer.toString(MAX_WORKERS), Long.toString(TTL.toMillis())), log));
      }
      // JVM start-up on a loaded machine takes a while; then the rule converges in a few steps
      await("3 workers, 4 +- 1 partitions each").atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(200))
          .untilAsserted(() -> assertShares(store, List.of(0, 1, 2), 3, 5));

      Map<String, LeaseState.Held> before = partitions(store);
      HolderId dead = member(store, 2).holder();
      Map<String, Long> orphaned = new HashMap<>();
      before.forEach((p, h) -> {
        if (h.holder().equals(dead)) {
          orphaned.put(p, h.lastToken());
        }
      });
      assertThat(orphaned).hasSizeBetween(3, 5);
      workers.get(2).signal("KILL");
      long killed = System.nanoTime();
      // the rule's bound is TTL plus about two renew intervals (TTL/3 each); allow a TTL more
      Duration bound = TTL.multipliedBy(3);
      await("the dead worker's partitions owned by the two survivors").atMost(bound)
          .pollInterval(Duration.ofMillis(100))
          .untilAsserted(() -> assertShares(store, List.of(0, 1), 5, 7));
      System.out.printf("partitions moved %d ms after SIGKILL (TTL %d ms)%n",
          (System.nanoTime() - killed) / 1_000_000, TTL.toMillis());

      // a write with the dead worker's token, once the new owner has written, is fenced out
      JdbcFence fence = JdbcFence.builder(pool).build();
      String p = orphaned.keySet().iterator().next();
      long old = orphaned.get(p);
      await("the new owner of " + p + " wrote").atMost(bound)
          .until(() -> fence.highestToken(p).orElse(0) > old);
      AtomicBoolean ran = new AtomicBoolean();
      assertThatThrownBy(() -> fence.write(p, old, connection -> {
        ran.set(true);
        return 1;
      })).isInstanceOf(FencedOutException.class);
      assertThat(ran).as("the stale write's work must not run").isFalse();
    }
  }

  /** Every partition held by one of {@code alive}, each holding {@code min} to {@code max}. */
  private void assertShares(PostgresLeaseStore store, List<Integer> alive, int min, int max) {
    Map<HolderId, Integer> byHolder = new HashMap<>();
    for (int k : alive) {
      byHolder.put(member(store, k).holder(), 0);
    }
    Map<String, LeaseState.Held> held = partitions(store);
    assertThat(held).as("held partitions").hasSize(PARTITIONS);
    held.values().forEach(h -> {
      assertThat(byHolder).as("holder of %s", h.name()).containsKey(h.holder());
      byHolder.merge(h.holder(), 1, Integer::sum);
    });
    assertThat(byHolder.values()).allSatisfy(n -> assertThat(n).isBetween(min, max));
  }

  private LeaseState.Held member(PostgresLeaseStore store, int k) {
    LeaseState s = store.inspect(topic + "-worker-" + k);
    assertThat(s).as("member lease of worker %d", k).isInstanceOf(LeaseState.Held.class);
    return (LeaseState.Held) s;
  }

  private Map<String, LeaseState.Held> partitions(PostgresLeaseStore store) {
    Map<String, LeaseState.Held> held = new HashMap<>();
    for (int i = 0; i < PARTITIONS; i++) {
      if (store.inspect(topic + "-partition-" + i) instanceof LeaseState.Held h) {
        held.put(h.name(), h);
      }
    }
    return held;
  }
}
