package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.tck.CountingLeaseStore;
import java.time.Duration;
import java.util.List;
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
