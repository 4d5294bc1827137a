package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Closing a group whose round spans several batch calls. */
class LeaseGroupCloseTest {

  /** A store whose batch calls each take {@code delay}, counting those in flight. */
  static final class SlowBatches extends ForwardingLeaseStore {
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger started = new AtomicInteger();
    final Duration delay;

    SlowBatches(LeaseStore delegate, Duration delay) {
      super(delegate);
      this.delay = delay;
    }

    @Override
    public Map<String, AcquireResult> acquireOrRenewAll(Collection<String> names, HolderId holder,
        Duration ttl) {
      inFlight.incrementAndGet();
      started.incrementAndGet();
      try {
        Thread.sleep(delay.toMillis());
        return super.acquireOrRenewAll(names, holder, ttl);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      } finally {
        inFlight.decrementAndGet();
      }
    }
  }

  /**
   * A round of three batches, each 0.8 s, with a 1 s call timeout: close() during the first batch
   * must not return while a later batch of that round is still being sent or in flight (before the
   * fix it waited one call timeout plus 1 s and returned with the third batch in flight, so its
   * releases raced the round's grants).
   */
  @Test
  void closeStopsARoundBetweenBatchesAndReturnsWithNoBatchInFlight() throws Exception {
    SlowBatches store = new SlowBatches(new InMemoryLeaseStore(), Duration.ofMillis(800));
    LeaseGroup group = LeaseGroup.builder(store).label("close").ttl(Duration.ofSeconds(30))
        .callTimeout(Duration.ofSeconds(1)).build();
    int names = 2 * LeaseStore.MAX_BATCH_SIZE + 1;
    for (int i = 0; i < names; i++) {
      group.add("n-" + i);
    }
    group.start();
    waitUntil("the first batch is in flight", Duration.ofSeconds(20),
        () -> store.inFlight.get() > 0);
    int startedBeforeClose = store.started.get();
    group.close();
    assertThat(store.inFlight.get()).as("batch calls still in flight when close() returned")
        .isZero();
    // close() waited for the round to end, so none can start later either
    assertThat(store.started.get()).as("batch calls the round started while close() ran")
        .isEqualTo(startedBeforeClose);
    assertThat(group.heldNames()).isEmpty();
  }
}
