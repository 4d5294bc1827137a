package dev.leases.tck.remote;

import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RemoteLeaseStoreTest {

  /**
   * A release listener that throws stays subscribed: the hint connection's reader ended on the
   * first throw, so later releases went unheard (the kit's subscriptionsToOneNameAreIndependent
   * failed on a store reached through this client: 'round 2' never came).
   */
  @Test
  void aReleaseListenerThatThrowsKeepsHearingReleases() throws Exception {
    InMemoryLeaseStore backing = new InMemoryLeaseStore();
    AtomicInteger hints = new AtomicInteger();
    try (LeaseStoreServer server = LeaseStoreServer.serve(backing);
        RemoteLeaseStore client = new RemoteLeaseStore(server.port(), Duration.ofSeconds(2));
        LeaseStore.Subscription sub = client.onRelease("n", () -> {
          hints.incrementAndGet();
          throw new IllegalStateException("a failing listener (expected)");
        })) {
      HolderId a = HolderId.generate();
      for (int round = 1; round <= 3; round++) {
        int want = round;
        await("hint " + round).atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(100))
            .until(() -> {
              backing.acquireOrRenew("n", a, Duration.ofSeconds(10)).orElseThrow();
              backing.release("n", a);
              return hints.get() >= want;
            });
      }
    }
  }
}
