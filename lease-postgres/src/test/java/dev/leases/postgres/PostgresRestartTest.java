package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Crash restarts of a dedicated server (stopped in immediate mode, so no shutdown checkpoint):
 * tokens keep increasing, the store recovers by itself, and release hints resume.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PostgresRestartTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  @Test
  void tokensKeepIncreasingAcrossImmediateStopsAndTheStoreRecovers() throws Exception {
    try (RestartablePostgres server = RestartablePostgres.start();
        HikariDataSource pool = PostgresServers.pool(server.url(), 4, c -> {
          c.setConnectionTimeout(1000);
          c.setInitializationFailTimeout(-1);
        });
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build()) {
      String name = "restart-lease";
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      AtomicInteger hints = new AtomicInteger();
      store.onRelease(name, hints::incrementAndGet);
      List<Long> tokens = new ArrayList<>();

      for (int crash = 0; crash < 3; crash++) {
        // a few tenures: renewals keep the token, releases and other holders advance it
        for (int cycle = 0; cycle < 3; cycle++) {
          HolderId h = cycle % 2 == 0 ? a : b;
          LeaseGrant g = store.acquireOrRenew(name, h, TTL).orElseThrow();
          assertThat(store.acquireOrRenew(name, h, TTL).orElseThrow().token())
              .isEqualTo(g.token());
          tokens.add(g.token());
          assertThat(store.release(name, h)).isTrue();
        }
        // and one live lease at the moment of the crash
        LeaseGrant live = store.acquireOrRenew(name, a, TTL).orElseThrow();
        tokens.add(live.token());
        int hintsBefore = hints.get();

        server.crash();
        try {
          store.inspect(name);
        } catch (LeaseStoreUnavailableException expected) {
          // while it is down (a call may also fail on a connection broken by the crash)
        }
        server.restart();

        List<Optional<LeaseGrant>> after = new ArrayList<>();
        await("the store answers again after restart " + crash).atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(100)).ignoreException(
                LeaseStoreUnavailableException.class)
            .until(() -> after.add(store.acquireOrRenew(name, b, TTL)));
        if (after.get(0).isEmpty()) {
          LeaseState state = store.inspect(name);
          assertThat(state.lastToken()).as("the committed grant survived the crash")
              .isEqualTo(live.token());
        }
        // b gets it once a's lease (which survived the crash) has expired
        LeaseGrant next = after.get(0).isPresent() ? after.get(0).orElseThrow()
            : await("a's lease expires").atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> store.acquireOrRenew(name, b, TTL), Optional::isPresent).orElseThrow();
        assertThat(next.token()).as("first token after restart %d", crash)
            .isGreaterThan(tokens.stream().mapToLong(Long::longValue).max().orElseThrow());
        tokens.add(next.token());
        assertThat(store.release(name, b)).isTrue();
        // the LISTEN thread reconnects (waking every subscriber, as releases may have been missed)
        await("release hints resume after restart " + crash).atMost(Duration.ofSeconds(30))
            .until(() -> hints.get() > hintsBefore);
        int hintsAfterRecovery = hints.get();
        LeaseGrant again = store.acquireOrRenew(name, b, TTL).orElseThrow();
        tokens.add(again.token());
        assertThat(store.release(name, b)).isTrue();
        await("a release after recovery is heard").atMost(Duration.ofSeconds(30))
            .until(() -> hints.get() > hintsAfterRecovery);
      }
      assertThat(tokens).isSorted().doesNotHaveDuplicates();
    }
  }
}
