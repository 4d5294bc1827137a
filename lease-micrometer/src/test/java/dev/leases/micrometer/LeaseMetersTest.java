package dev.leases.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.leader.LeaderLoop;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.InMemoryRunLedger;
import dev.leases.once.RunFailedException;
import dev.leases.spi.ForwardingLeaseStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class LeaseMetersTest {

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double gauge(String lease) {
    return registry.get(LeaseMeters.LEADER).tag("lease", lease).gauge().value();
  }

  private double count(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  private double functionCount(String name, String... tags) {
    return registry.get(name).tags(tags).functionCounter().count();
  }

  @Test
  void leaderGaugeAndCountersFollowLeadershipAsItMoves() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    LeaderMetrics a = new LeaderMetrics("billing");
    SimpleMeterRegistry other = new SimpleMeterRegistry();
    LeaderMetrics b = new LeaderMetrics("billing");
    try (LeaderLoop first = LeaderLoop.builder(store, "billing").ttl(Duration.ofSeconds(3))
        .listener(a).build()) {
      a.track(first).bindTo(registry);
      assertThat(gauge("billing")).isZero();
      first.start();
      await().until(() -> gauge("billing") == 1.0);
      await().until(() -> functionCount(LeaseMeters.ACQUISITIONS, "lease", "billing") == 1.0);

      LeaderLoop second = LeaderLoop.builder(store.newClient(), "billing")
          .ttl(Duration.ofSeconds(3)).listener(b).build();
      b.track(second).bindTo(other);
      second.start();
      first.close(); // releases: the second takes over
      await().until(() -> other.get(LeaseMeters.LEADER).gauge().value() == 1.0);
      assertThat(gauge("billing")).isZero();
      await().until(() -> functionCount(LeaseMeters.LOSSES, "lease", "billing", "reason", "closed")
          == 1.0);
      assertThat(functionCount(LeaseMeters.LOSSES, "lease", "billing", "reason", "superseded"))
          .isZero();
      second.close();
    }
  }

  @Test
  void eventsBeforeBindingAreCountedAndTheGaugeFollowsEventsWithoutATrackedLoop() {
    LeaderMetrics m = new LeaderMetrics("x");
    m.acquired("x", 7);
    m.bindTo(registry);
    assertThat(gauge("x")).isEqualTo(1.0);
    assertThat(functionCount(LeaseMeters.ACQUISITIONS, "lease", "x")).isEqualTo(1.0);
    m.lost("x", 7, dev.leases.leader.LossReason.RENEWAL_FAILED);
    assertThat(gauge("x")).isZero();
    assertThat(functionCount(LeaseMeters.LOSSES, "lease", "x", "reason", "renewal_failed"))
        .isEqualTo(1.0);
  }

  @Test
  void trackingALoopOfAnotherLeaseIsRefused() {
    try (LeaderLoop loop = LeaderLoop.builder(new InMemoryLeaseStore(), "a")
        .ttl(Duration.ofSeconds(3)).build()) {
      assertThatThrownBy(() -> new LeaderMetrics("b").track(loop))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a'");
    }
  }

  @Test
  void storeDecoratorTimesRenewalsByOutcomeAndCountsErrorsByOperation() {
    AtomicBoolean failing = new AtomicBoolean();
    InMemoryLeaseStore memory = new InMemoryLeaseStore();
    LeaseStore faulty = new ForwardingLeaseStore(memory) {
      @Override
      public Optional<dev.leases.LeaseGrant> acquireOrRenew(String n, HolderId h, Duration t) {
        if (failing.get()) {
          throw new LeaseStoreUnavailableException("down", null);
        }
        return super.acquireOrRenew(n, h, t);
      }

      @Override
      public boolean release(String n, HolderId h) {
        if (failing.get()) {
          throw new LeaseStoreUnavailableException("down", null);
        }
        return super.release(n, h);
      }
    };
    MeteredLeaseStore store = new MeteredLeaseStore(faulty, registry);
    HolderId me = HolderId.generate();
    HolderId you = HolderId.generate();
    assertThat(store.acquireOrRenew("l", me, Duration.ofSeconds(3))).isPresent();
    assertThat(store.acquireOrRenew("l", me, Duration.ofSeconds(3))).isPresent();
    assertThat(store.acquireOrRenew("l", you, Duration.ofSeconds(3))).isEmpty();
    failing.set(true);
    assertThatThrownBy(() -> store.acquireOrRenew("l", me, Duration.ofSeconds(3)))
        .isInstanceOf(LeaseStoreUnavailableException.class);
    assertThatThrownBy(() -> store.release("l", me))
        .isInstanceOf(LeaseStoreUnavailableException.class);

    assertThat(registry.get(LeaseMeters.RENEWAL).tags("lease", "l", "outcome", "granted").timer()
        .count()).isEqualTo(2);
    assertThat(registry.get(LeaseMeters.RENEWAL).tags("outcome", "refused").timer().count())
        .isEqualTo(1);
    assertThat(registry.get(LeaseMeters.RENEWAL).tags("outcome", "error").timer().count())
        .isEqualTo(1);
    assertThat(count(LeaseMeters.STORE_ERRORS, "operation", "acquire_or_renew",
        "exception", "LeaseStoreUnavailableException")).isEqualTo(1);
    assertThat(count(LeaseMeters.STORE_ERRORS, "operation", "release")).isEqualTo(1);
    assertThat(registry.get(LeaseMeters.RENEWAL).timer().getId().getTag("holder")).isNull();
  }

  @Test
  void fenceWritesAreCountedAcceptedRejectedAndError() {
    FenceMetrics fence = new FenceMetrics(registry);
    assertThat(fence.record("ledger", () -> 42)).isEqualTo(42);
    assertThatThrownBy(() -> fence.record("ledger", () -> {
      throw new FencedOutException("ledger", 3, 5);
    })).isInstanceOf(FencedOutException.class);
    assertThatThrownBy(() -> fence.record("ledger", () -> {
      throw new LeaseStoreUnavailableException("down", null);
    })).isInstanceOf(LeaseStoreUnavailableException.class);
    assertThat(count(LeaseMeters.FENCE_WRITES, "resource", "ledger", "result", "accepted"))
        .isEqualTo(1);
    assertThat(count(LeaseMeters.FENCE_WRITES, "result", "rejected")).isEqualTo(1);
    assertThat(count(LeaseMeters.FENCE_WRITES, "result", "error")).isEqualTo(1);
  }

  @Test
  void runsAreTimedByOutcome() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    RunMetrics runs = new RunMetrics(registry);
    try (ExactlyOnce<Void> once = ExactlyOnce.builder(store, new InMemoryRunLedger())
        .ttl(Duration.ofSeconds(3)).build()) {
      runs.run(once, "nightly", "2026-01-31", (r, ctx) -> {});
      runs.run(once, "nightly", "2026-01-31", (r, ctx) -> {});
      assertThatThrownBy(() -> runs.run(once, "nightly", "2026-02-01", (r, ctx) -> {
        throw new IllegalStateException("boom");
      })).isInstanceOf(RunFailedException.class);
    }
    assertThat(registry.get(LeaseMeters.RUNS).tags("job", "nightly", "outcome", "completed")
        .timer().count()).isEqualTo(1);
    assertThat(registry.get(LeaseMeters.RUNS).tags("outcome", "already_completed").timer()
        .count()).isEqualTo(1);
    assertThat(registry.get(LeaseMeters.RUNS).tags("outcome", "failed").timer().count())
        .isEqualTo(1);
  }
}
