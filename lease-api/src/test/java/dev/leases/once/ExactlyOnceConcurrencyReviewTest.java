package dev.leases.once;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.time.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** One thread-safe runner, many jobs at once, over a store with a realistic round trip. */
class ExactlyOnceConcurrencyReviewTest {

  @Test
  void aDozenConcurrentRunsOverASlowishStoreKeepTheirLeases() throws Exception {
    ManualClock clock = new ManualClock();
    LeaseStore slow = new ForwardingLeaseStore(new InMemoryLeaseStore(clock)) {
      @Override
      public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
        try {
          Thread.sleep(80); // a cross-zone round trip
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return super.acquireOrRenew(name, holder, ttl);
      }
    };
    InMemoryRunLedger ledger = new InMemoryRunLedger(clock);
    AtomicInteger lostWhileRunning = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(12);
    try (ExactlyOnce<Void> once = ExactlyOnce.builder(slow, ledger).ttl(Duration.ofMillis(900))
        .clock(clock).build()) {
      List<Future<RunOutcome>> runs = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        String job = "job-" + i;
        runs.add(pool.submit(() -> once.run(job, "r", (n, ctx) -> {
          long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2000);
          while (System.nanoTime() < until) {
            if (!ctx.isHeld()) {
              lostWhileRunning.incrementAndGet();
              return;
            }
            Thread.sleep(10);
          }
        })));
      }
      for (Future<RunOutcome> r : runs) {
        assertThat(r.get(30, TimeUnit.SECONDS)).isInstanceOf(RunOutcome.Completed.class);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(lostWhileRunning).as("runs whose holding ended although the store answered every"
        + " call within 80 ms").hasValue(0);
  }
}
