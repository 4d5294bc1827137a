package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A started group of 1,000 names on the real clock: store calls per round, handover on close. */
class LeaseGroupThreadsTest {

  private static final int NAMES = 1000;
  private static final Duration TTL = Duration.ofSeconds(3);

  /** Counts the calls that reach the store: a batch is one call, as on a store that has one. */
  private static final class Counting extends ForwardingLeaseStore {
    final List<Integer> acquireBatches = new CopyOnWriteArrayList<>();
    final AtomicInteger releaseBatches = new AtomicInteger();
    final AtomicInteger singleCalls = new AtomicInteger();

    Counting(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Map<String, AcquireResult> acquireOrRenewAll(
        Collection<String> names, HolderId holder, Duration ttl) {
      acquireBatches.add(names.size());
      return delegate().acquireOrRenewAll(names, holder, ttl);
    }

    @Override
    public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
      releaseBatches.incrementAndGet();
      return delegate().releaseAll(names, holder);
    }

    @Override
    public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
      singleCalls.incrementAndGet();
      return super.acquireOrRenew(name, holder, ttl);
    }

    @Override
    public boolean release(String name, HolderId holder) {
      singleCalls.incrementAndGet();
      return super.release(name, holder);
    }

    @Override
    public LeaseState inspect(String name) {
      singleCalls.incrementAndGet();
      return super.inspect(name);
    }
  }

  private static String shard(int i) {
    return "shard-" + i;
  }

  @Test
  void aThousandNamesAreRenewedWithOneCallARoundAndHandedOverWithOneReleaseOnClose()
      throws Exception {
    InMemoryLeaseStore backing = new InMemoryLeaseStore();
    Counting first = new Counting(backing);
    Counting second = new Counting(backing.newClient());
    int perRound = (NAMES + LeaseStore.MAX_BATCH_SIZE - 1) / LeaseStore.MAX_BATCH_SIZE;
    try (LeaseGroup a = LeaseGroup.builder(first).label("a").ttl(TTL).build();
        LeaseGroup b = LeaseGroup.builder(second).label("b").ttl(TTL).build()) {
      for (int i = 0; i < NAMES; i++) {
        a.add(shard(i));
        b.add(shard(i));
      }
      a.start();
      waitUntil("a holds every name", Duration.ofSeconds(20), () -> a.heldNames().size() == NAMES);
      b.start();
      int aFrom = first.acquireBatches.size();
      int bFrom = second.acquireBatches.size();
      long from = System.nanoTime();
      waitUntil("three more rounds of a", Duration.ofSeconds(30),
          () -> first.acquireBatches.size() >= aFrom + 3 * perRound);
      double renewals = (System.nanoTime() - from) / (double) a.renewInterval().toNanos();
      List<Integer> aCalls = List.copyOf(first.acquireBatches);
      List<Integer> bCalls = List.copyOf(second.acquireBatches);
      List<Integer> aWindow = aCalls.subList(aFrom, aCalls.size());
      List<Integer> bWindow = bCalls.subList(bFrom, bCalls.size());
      System.out.printf("%d names, batch limit %d: leader %d batch calls in %.1f renew intervals"
          + " (sizes %s); follower %d batch calls (sizes %s); single calls %d + %d%n", NAMES,
          LeaseStore.MAX_BATCH_SIZE, aWindow.size(), renewals, aWindow, bWindow.size(), bWindow,
          first.singleCalls.get(), second.singleCalls.get());
      assertThat(aWindow).as("every renewal call carries a full batch").allMatch(s -> s == NAMES);
      assertThat((double) aWindow.size()).as("calls per renewal round <= ceil(%d / %d) = %d",
          NAMES, LeaseStore.MAX_BATCH_SIZE, perRound).isLessThanOrEqualTo((renewals + 1) * perRound);
      assertThat((double) bWindow.size()).as("the follower's calls per round")
          .isLessThanOrEqualTo((renewals + 1) * perRound);
      assertThat(first.singleCalls.get() + second.singleCalls.get())
          .as("no single-name call reaches the store").isZero();
      assertThat(b.heldNames()).isEmpty();

      a.close();
      assertThat(first.releaseBatches.get()).as("close releases every name with one batch")
          .isEqualTo(perRound);
      waitUntil("b holds every name after a's close", Duration.ofSeconds(20),
          () -> b.heldNames().size() == NAMES);
      for (int i = 0; i < NAMES; i += 97) {
        assertThat(backing.inspect(shard(i))).isInstanceOf(LeaseState.Held.class)
            .matches(s -> ((LeaseState.Held) s).holder().equals(b.holder()));
      }
    }
  }
}
