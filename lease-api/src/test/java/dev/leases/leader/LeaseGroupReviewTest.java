package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreClosedException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.time.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Review findings on {@link LeaseGroup}: interleavings the round-by-round tests did not cover,
 * driven with a manual clock and a scripted store.
 */
class LeaseGroupReviewTest {

  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration RENEW = Duration.ofSeconds(1);

  private final ManualClock clock = new ManualClock();
  private final ScriptedStore store = new ScriptedStore(clock);
  private final List<String> events = Collections.synchronizedList(new ArrayList<>());

  private final LeaderListener recorder = new LeaderListener() {
    @Override
    public void acquired(String name, long token) {
      events.add(name + " acquired " + token);
    }

    @Override
    public void lost(String name, long token, LossReason reason) {
      events.add(name + " lost " + token + " " + reason);
    }
  };

  private LeaseGroup group(String... names) {
    LeaseGroup g = LeaseGroup.builder(store).ttl(TTL).clock(clock).listener(recorder)
        .storeCalls(StoreCalls.direct()).listenerExecutor(Runnable::run).build();
    for (String n : names) {
      assertThat(g.add(n)).isTrue();
    }
    return g;
  }

  /** As for the loop: a suspension while a batch is on its way is a clock jump. */
  @Test
  void aSuspensionDuringABatchIsAClockJumpAtTheNextRound() {
    LeaseGroup g = group("a");
    g.round();
    long a = g.currentToken("a");
    HolderId before = g.holder();
    clock.advance(RENEW);
    store.beforeNextBatch(() -> clock.suspend(Duration.ofSeconds(40)));
    g.round();
    assertThat(g.currentToken("a")).as("the wall deadline passed during the suspension").isZero();
    g.round();
    assertThat(events).as("the suspension happened within the group's watch")
        .contains("a lost " + a + " CLOCK_JUMP");
    assertThat(g.holder()).as("a fresh holder id after the suspension").isNotEqualTo(before);
  }

  /**
   * A name removed and added back while the round's first releases are in flight: the release
   * queued by the removal must not be sent after the re-added name was granted, or the group
   * reports a token for a lease it has itself just freed.
   */
  @Test
  void aNameRemovedAndAddedBackDuringTheRoundsReleasesKeepsTheLeaseItReports() {
    LeaseGroup g = group("a", "z");
    g.round();
    clock.advance(RENEW);
    g.remove("z"); // the next round starts by releasing z
    store.beforeNextReleaseBatch(() -> {
      g.remove("a");
      g.add("a");
    });
    g.round();
    long a = g.currentToken("a");
    assertThat(a).as("the re-added name is held again").isPositive();
    assertThat(store.inspect("a")).as("the group reports token " + a + " for 'a'; the store must"
        + " agree that the group holds it").isInstanceOf(LeaseState.Held.class);
  }

  /**
   * The store closed under the group in the middle of a round: every name the group held must be
   * reported lost, not only those of the batch that saw the close.
   */
  @Test
  void aStoreClosedInAFreeBatchStandsDownTheNamesRenewedEarlierInTheRound() {
    LeaseGroup g = group("a");
    g.round();
    long a = g.currentToken("a");
    store.real.acquireOrRenew("b", HolderId.generate(), TTL).orElseThrow();
    g.add("b");
    clock.advance(RENEW);
    store.beforeNextBatch(() -> {}); // the renewal of a
    store.beforeNextBatch(() -> {
      throw new LeaseStoreClosedException("store closed");
    }); // the free batch with b
    g.round();
    assertThat(events).as("the group stopped: its listeners must hear that 'a' is gone")
        .contains("a lost " + a + " RENEWAL_FAILED");
    assertThat(g.currentToken("a")).isZero();
  }

  /** A batch that fails with an Error is a batch that threw: its names stand down, rounds go on. */
  @Test
  void aBatchThatThrowsAnErrorStandsItsNamesDownAndTheRoundsGoOn() throws Exception {
    LeaderLoopReviewTest.ThrowingOnce broken = new LeaderLoopReviewTest.ThrowingOnce(
        new InMemoryLeaseStore(), new NoClassDefFoundError("io/netty/channel/EventLoopGroup"));
    try (LeaseGroup g = LeaseGroup.builder(broken).ttl(TTL).listener(recorder).start()) {
      g.add("a");
      waitUntil("the group holds a", Duration.ofSeconds(10), () -> g.currentToken("a") != 0);
      long a = g.currentToken("a");
      broken.armed.set(true);
      waitUntil("the group hears of the failed renewal", Duration.ofSeconds(10),
          () -> events.contains("a lost " + a + " RENEWAL_FAILED"));
      waitUntil("the group holds a again", Duration.ofSeconds(10), () -> g.currentToken("a") != 0);
    }
  }

  /** As for the loop: close releases a name whose last renewal had an unknown outcome. */
  @Test
  void closeAfterAFailedRenewalBatchReleasesWhatTheStoreMayStillHold() {
    LeaseGroup g = group("a");
    g.round();
    clock.advance(RENEW);
    store.failNextBatch();
    g.round();
    assertThat(g.currentToken("a")).isZero();
    assertThat(store.inspect("a")).as("unknown: the store kept our lease")
        .isInstanceOf(LeaseState.Held.class);
    g.close();
    assertThat(store.inspect("a")).as("a clean close hands over at once")
        .isInstanceOf(LeaseState.Free.class);
  }

  /**
   * As for the loop: a name whose release hints cannot be subscribed is still a member that the
   * group contends for, and add() says so (it threw and a retry returned false before).
   */
  @Test
  void aNameWhoseReleaseHintsCannotBeSubscribedIsAddedAndContendedFor() {
    LeaseGroup g = LeaseGroup.builder(new LeaderLoopReviewTest.HintsDownOnce(store)).ttl(TTL)
        .clock(clock).listener(recorder).storeCalls(StoreCalls.direct())
        .listenerExecutor(Runnable::run).build();
    boolean added;
    try {
      added = g.add("a");
    } catch (RuntimeException e) {
      added = g.add("a"); // a caller that retries add()
    }
    assertThat(added).as("add() reports the name as added").isTrue();
    g.round();
    assertThat(g.currentToken("a")).isPositive();
  }
}
