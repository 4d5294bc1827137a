package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.testing.LogCapture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Started loops on the system clock: listeners off the renewal path, shared threads, restore. */
class LeaderLoopThreadsTest {

  private static final Duration TTL = Duration.ofSeconds(1);

  /** Counts renewals that reached the store. */
  private static final class Counting extends ForwardingLeaseStore {
    final AtomicInteger acquires = new AtomicInteger();

    Counting(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
      acquires.incrementAndGet();
      return super.acquireOrRenew(name, holder, ttl);
    }
  }

  private static String name() {
    return "threads-" + System.nanoTime();
  }


  @Test
  void aListenerThatBlocksFiveTtlsDelaysNoRenewalAndIsNamedInAWarning() throws Exception {
    InMemoryLeaseStore backing = new InMemoryLeaseStore();
    Counting store = new Counting(backing);
    String name = name();
    CountDownLatch release = new CountDownLatch(1);
    List<String> events = new CopyOnWriteArrayList<>();
    LeaderListener blocking = new LeaderListener() {
      @Override
      public void acquired(String n, long token) {
        events.add("acquired-start " + token);
        try {
          release.await(TTL.multipliedBy(5).toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        events.add("acquired-end " + token);
      }

      @Override
      public void lost(String n, long token, LossReason reason) {
        events.add("lost " + token + " " + reason);
      }

      @Override
      public String toString() {
        return "BlockingListener";
      }
    };
    long[] token = new long[1];
    String log = LogCapture.during(() -> {
      try (LeaderLoop loop = LeaderLoop.builder(store, name).ttl(TTL).listener(blocking).start()) {
        token[0] = loop.awaitLeadership(Duration.ofSeconds(10));
        int atStart = store.acquires.get();
        long startedAt = System.nanoTime();
        while (System.nanoTime() - startedAt < TTL.multipliedBy(4).toNanos()) {
          assertThat(loop.currentToken()).as("leader throughout the blocked callback")
              .isEqualTo(token[0]);
          Thread.sleep(20);
        }
        assertThat(store.acquires.get() - atStart).as("renewals while the listener blocked")
            .isGreaterThanOrEqualTo(6);
        LeaseState st = backing.inspect(name);
        assertThat(st).isInstanceOf(LeaseState.Held.class);
        assertThat(st.lastToken()).isEqualTo(token[0]);
        release.countDown();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      try {
        waitUntil("lost(CLOSED) is delivered", Duration.ofSeconds(10),
            () -> events.stream().anyMatch(e -> e.startsWith("lost")));
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    });
    assertThat(token[0]).isPositive();
    assertThat(events).as("close() keeps the order: lost after acquired has returned")
        .containsExactly("acquired-start " + token[0], "acquired-end " + token[0],
            "lost " + token[0] + " CLOSED");
    assertThat(log).contains("listener callback acquired(" + token[0] + ") of [BlockingListener]"
        + " has been running for");
    assertThat(log).doesNotContain("no renewal landed before the local deadline");
  }

  @Test
  void manyLoopsShareAFewThreads() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    int before = Thread.activeCount();
    List<LeaderLoop> loops = new ArrayList<>();
    try {
      for (int i = 0; i < 200; i++) {
        loops.add(LeaderLoop.builder(store.newClient(), name() + "-" + i).ttl(TTL).start());
      }
      waitUntil("all 200 loops lead", Duration.ofSeconds(30),
          () -> loops.stream().allMatch(LeaderLoop::isLeader));
      int added = Thread.activeCount() - before;
      assertThat(added).as("threads added by 200 loops (they share the scheduler, call and"
          + " listener pools)").isLessThan(20);
    } finally {
      loops.forEach(LeaderLoop::close);
    }
  }

  @Test
  void revokeAllRevokesEveryStartedLoopAndTheCracHookDoesTheSame() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    String name = name();
    List<String> lost = new CopyOnWriteArrayList<>();
    LeaderListener l = new LeaderListener() {
      @Override
      public void lost(String n, long token, LossReason reason) {
        lost.add(n + " " + reason);
      }
    };
    try (LeaderLoop a = LeaderLoop.builder(store, name + "-a").ttl(TTL).listener(l).start();
        LeaderLoop b = LeaderLoop.builder(store, name + "-b").ttl(TTL).listener(l).start()) {
      long ta = a.awaitLeadership(Duration.ofSeconds(10));
      b.awaitLeadership(Duration.ofSeconds(10));
      HolderId idA = a.holder();
      assertThat(RestoreHooks.revokeAll()).isGreaterThanOrEqualTo(2);
      assertThat(a.currentToken()).isZero();
      assertThat(a.holder()).isNotEqualTo(idA);
      waitUntil("both loops heard REVOKED", Duration.ofSeconds(10),
          () -> lost.contains(name + "-a REVOKED") && lost.contains(name + "-b REVOKED"));
      long ta2 = a.awaitLeadership(Duration.ofSeconds(10));
      assertThat(ta2).as("re-acquired after the old id's tenure expired").isGreaterThan(ta);

      assertThat(RestoreHooks.checkpointRestoreHooked()).as("org.crac is on the test class path")
          .isTrue();
      HolderId idA2 = a.holder();
      CracRestoreHook.INSTANCE.afterRestore(null);
      assertThat(a.currentToken()).as("revoked by the CRaC afterRestore hook").isZero();
      assertThat(a.holder()).isNotEqualTo(idA2);
    }
  }
}
