package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.CountingLeaseStore;
import dev.leases.tck.process.StoreRecipe;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The scale part on the in-memory store: one group, batch calls, rounds found from outside. */
class ScaleTest {

  @Test
  @Timeout(120)
  void oneGroupRenewsEveryNameInBatchesOfAtMostTenThousandAndKeepsEveryToken() throws Exception {
    try (MemoryBackend backend = new MemoryBackend()) {
      Scale.Result r = Scale.run(backend, 25_000, 2, Duration.ofSeconds(3),
          "t" + System.nanoTime());
      assertThat(r.note()).isEmpty();
      assertThat(r.allHeld()).as("lost %s", r.lost()).isTrue();
      assertThat(r.callsPerRound()).as("3 batches of <= 10,000 names, one call each").isEqualTo(3);
      assertThat(r.renewRoundMs()).hasSize(2);
      assertThat(r.batch()).isEqualTo("one call per name"); // the in-memory store keeps the default
      assertThat(r.ttl()).isEqualTo(Duration.ofSeconds(3));
      assertThat(r.renewInterval()).isEqualTo(Duration.ofSeconds(1));
      assertThat(r.threadsPeak()).isGreaterThanOrEqualTo(r.threadsBefore());
      assertThat(r.acquireMs()).isPositive();
    }
  }

  /**
   * A store whose first batch answers only after the group has given up on it and sent the next
   * one (as Consul did for 10,000 fresh names beyond TTL/3): the acquire round did not complete,
   * and the report must say so, with the bound, never as a (negative) duration.
   */
  @Test
  @Timeout(120)
  void anAcquireRoundThatOverrunsTheGroupsBoundIsReportedAsNotCompletedWithTheBound()
      throws Exception {
    try (MemoryBackend memory = new MemoryBackend()) {
      Backend slowFirstBatch = new Backend() {
        @Override
        public String name() {
          return "slow-first-batch";
        }

        @Override
        public String description() {
          return "the in-memory store, its first batch answered after the second one started";
        }

        @Override
        public LeaseStore openStore() {
          return new SlowFirstBatch(memory.openStore());
        }

        @Override
        public StoreRecipe recipe() {
          return memory.recipe();
        }

        @Override
        public Compared compared() throws Exception {
          return Compared.of(openStore(), () -> null);
        }

        @Override
        public void close() {}
      };
      Scale.Result r = Scale.run(slowFirstBatch, 100, 2, Duration.ofSeconds(3),
          "t" + System.nanoTime());
      RunResult run = new RunResult("test", java.time.Instant.now(),
          BenchOptions.parse(new String[] {"--backends", "memory"}));
      RunResult.BackendResult b = new RunResult.BackendResult("slow-first-batch");
      b.scale.add(r);
      run.backends.add(b);
      String table = Report.scaleTable(run).text();
      assertThat(table).as(table)
          .contains("did not complete within 1.00 s")
          .doesNotContainPattern("\\s-[0-9]");
      assertThat(r.acquireMs()).as("no duration for a round that did not complete").isNaN();
      assertThat(Report.json(run)).contains("\"acquire_round_ms\": null",
          "\"acquire_round_completed\": false", "\"acquire_round_bound_ms\": 1000");
    }
  }

  /**
   * Holds its first {@code acquireOrRenewAll}, interrupts or not, until a second one has started
   * (at most 60 s).
   */
  private static final class SlowFirstBatch extends ForwardingLeaseStore {
    private final AtomicInteger batches = new AtomicInteger();
    private final CountDownLatch second = new CountDownLatch(1);

    SlowFirstBatch(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Map<String, AcquireResult> acquireOrRenewAll(Collection<String> names, HolderId holder,
        Duration ttl) {
      if (batches.incrementAndGet() == 1) { // deaf to the group's interrupt, as an HTTP read is
        boolean interrupted = false;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (second.getCount() > 0 && System.nanoTime() < end) {
          try {
            second.await(end - System.nanoTime(), TimeUnit.NANOSECONDS);
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      } else {
        second.countDown();
      }
      return delegate().acquireOrRenewAll(names, holder, ttl);
    }
  }

  @Test
  void batchRoundsEndWhenEveryNameWasSentOrANameRepeats() {
    try (InMemoryLeaseStore mem = new InMemoryLeaseStore();
        CountingLeaseStore counting = new CountingLeaseStore(mem.newClient())) {
      Scale.BatchRounds rounds = new Scale.BatchRounds(counting, 5);
      HolderId h = HolderId.generate();
      Duration ttl = Duration.ofMinutes(1);
      List<String> names = IntStream.range(0, 5).mapToObj(i -> "br-" + i).toList();
      rounds.acquireOrRenewAll(names.subList(0, 3), h, ttl);
      assertThat(rounds.rounds()).isEmpty();
      rounds.acquireOrRenewAll(names.subList(3, 5), h, ttl); // all 5 sent: the round ends
      assertThat(rounds.rounds()).singleElement().satisfies(r -> {
        assertThat(r.calls()).isEqualTo(2);
        assertThat(r.names()).isEqualTo(5);
        assertThat(r.granted()).isEqualTo(5);
      });
      rounds.acquireOrRenewAll(names.subList(0, 2), h, ttl); // a round that sends only some names
      rounds.acquireOrRenewAll(names.subList(1, 3), h, ttl); // repeats br-1: a new round
      assertThat(rounds.rounds()).hasSize(2);
      assertThat(rounds.rounds().get(1).names()).isEqualTo(2);
      assertThat(rounds.releaseAll(names, h)).containsValue(true);
      assertThat(counting.calls()).as("the batch release is one call").isEqualTo(5);
    }
  }

  @Test
  void inMemoryStoreUsesTheDefaultBatch() {
    try (InMemoryLeaseStore mem = new InMemoryLeaseStore()) {
      assertThat(Scale.nativeBatch(mem.newClient())).isFalse();
    }
  }
}
