package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.time.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The lease group driven round by round with a manual clock and a scripted store: no sleeps. */
class LeaseGroupTest {

  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration RENEW = Duration.ofSeconds(1);
  private static final Duration MARGIN = Duration.ofMillis(300);

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

    @Override
    public void tokenAdvanced(String name, long oldToken, long newToken) {
      events.add(name + " advanced " + oldToken + "->" + newToken);
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

  private Map<String, Long> tokens(LeaseGroup g, String... names) {
    Map<String, Long> t = new TreeMap<>();
    for (String n : names) {
      t.put(n, g.currentToken(n));
    }
    return t;
  }

  @Test
  void acquiresEveryNameWithOneBatchAndRenewsThemWithOneBatchEveryThirdOfTheTtl() {
    LeaseGroup g = group("a", "b", "c");
    assertThat(g.renewInterval()).isEqualTo(RENEW);
    assertThat(g.currentToken("a")).isZero();
    Duration next = g.round();
    assertThat(next).isEqualTo(RENEW);
    Map<String, Long> first = tokens(g, "a", "b", "c");
    assertThat(first.values()).allMatch(t -> t > 0).doesNotHaveDuplicates();
    assertThat(store.acquireBatches).isEqualTo(1);
    assertThat(events).containsExactlyInAnyOrder("a acquired " + first.get("a"),
        "b acquired " + first.get("b"), "c acquired " + first.get("c"));
    for (int i = 0; i < 5; i++) {
      clock.advance(next);
      next = g.round();
      assertThat(tokens(g, "a", "b", "c")).isEqualTo(first);
    }
    assertThat(store.acquireBatches).as("one batch per round").isEqualTo(6);
    assertThat(events).hasSize(3);
    assertThat(g.heldNames()).containsExactly("a", "b", "c");
  }

  @Test
  void namesBeyondTheBatchLimitAreSplitIntoAsFewBatchesAsTheLimitAllows() {
    int n = 2 * LeaseStore.MAX_BATCH_SIZE + 500;
    LeaseGroup g = group();
    for (int i = 0; i < n; i++) {
      g.add("shard-" + i);
    }
    g.round();
    assertThat(g.heldNames()).hasSize(n);
    assertThat(store.acquireBatches).isEqualTo(3);
    assertThat(store.batchSizes).allMatch(s -> s <= LeaseStore.MAX_BATCH_SIZE);
    clock.advance(RENEW);
    g.round();
    assertThat(store.acquireBatches).as("renewing %d names takes ceil(%d / %d) calls", n, n,
        LeaseStore.MAX_BATCH_SIZE).isEqualTo(6);
  }

  @Test
  void aFailedBatchLosesEveryNameInItAtOnceAndTheNextRoundGetsThemBackWithTheirTokens() {
    LeaseGroup g = group("a", "b");
    g.round();
    Map<String, Long> held = tokens(g, "a", "b");
    clock.advance(RENEW);
    store.failNextBatch();
    g.round();
    assertThat(tokens(g, "a", "b").values()).as("unknown is no, for every name").containsOnly(0L);
    assertThat(events).contains("a lost " + held.get("a") + " RENEWAL_FAILED",
        "b lost " + held.get("b") + " RENEWAL_FAILED");
    clock.advance(RENEW);
    g.round();
    assertThat(tokens(g, "a", "b")).as("the store still had our unexpired leases").isEqualTo(held);
  }

  @Test
  void partialGrantsAreNormalAndAFreedNameIsTakenInALaterRound() {
    HolderId other = HolderId.generate();
    LeaseGrant b = store.real.acquireOrRenew("b", other, TTL).orElseThrow();
    LeaseGroup g = group("a", "b", "c");
    g.round();
    assertThat(g.heldNames()).containsExactly("a", "c");
    assertThat(g.currentToken("b")).isZero();
    store.real.release("b", other);
    clock.advance(RENEW);
    g.round();
    assertThat(g.currentToken("b")).isGreaterThan(b.token());
    assertThat(store.acquireBatches).as("a renewal batch and a follower batch per round")
        .isEqualTo(3);
  }

  @Test
  void eachNamesTokenDropsAtItsOwnLocalDeadlineCountedFromItsBatchsSendTime() {
    LeaseGroup g = group("early");
    g.round();
    long early = g.currentToken("early");
    clock.advance(Duration.ofMillis(500));
    g.add("late");
    Duration slowAnswer = Duration.ofMillis(700);
    store.beforeNextBatch(() -> { }).beforeNextBatch(() -> clock.advance(slowAnswer));
    g.round(); // renews "early" (sent at 0.5 s), then acquires "late" (sent at 0.5 s, answered 1.2 s)
    long late = g.currentToken("late");
    assertThat(late).isPositive();
    clock.advance(TTL.minus(MARGIN).minus(slowAnswer).minusMillis(1));
    assertThat(g.currentToken("early")).isEqualTo(early);
    assertThat(g.currentToken("late")).isEqualTo(late);
    clock.advance(Duration.ofMillis(1));
    assertThat(g.currentToken("late")).as("send + ttl - margin, not answer + ttl - margin").isZero();
    assertThat(g.currentToken("early")).as("renewed in its own batch, sent at the same time")
        .isZero();
    assertThat(store.inspect("late")).as("the store still holds it: we stood down first")
        .isInstanceOf(LeaseState.Held.class);
    g.round();
    assertThat(events).contains("late lost " + late + " LOCAL_DEADLINE");
  }

  @Test
  void aSuspendedVmStandsEveryNameDownAndTheGroupContendsWithAFreshHolderId() {
    LeaseGroup g = group("a", "b");
    g.round();
    Map<String, Long> held = tokens(g, "a", "b");
    HolderId before = g.holder();
    clock.advance(Duration.ofMillis(500));
    clock.suspend(Duration.ofSeconds(40));
    g.round();
    assertThat(events).contains("a lost " + held.get("a") + " CLOCK_JUMP",
        "b lost " + held.get("b") + " CLOCK_JUMP");
    assertThat(g.holder()).isNotEqualTo(before);
    assertThat(g.heldNames()).as("the old id still holds them in the store").isEmpty();
    clock.advance(TTL);
    g.round();
    assertThat(g.currentToken("a")).isGreaterThan(held.get("a"));
    assertThat(g.currentToken("b")).isGreaterThan(held.get("b"));
  }

  @Test
  void aSmallClockDisagreementWithinToleranceIsNotAJump() {
    LeaseGroup g = group("a");
    g.round();
    clock.advance(RENEW);
    clock.jumpWall(MARGIN.minusMillis(50));
    g.round();
    assertThat(g.currentToken("a")).isPositive();
    assertThat(events).hasSize(1);
  }

  @Test
  void revokeStandsEveryNameDownAtOnceWithoutReleasingTheOldIdsTenures() {
    LeaseGroup g = group("a", "b");
    g.round();
    Map<String, Long> held = tokens(g, "a", "b");
    HolderId before = g.holder();
    g.revoke();
    assertThat(g.heldNames()).as("no token at once, before any round").isEmpty();
    assertThat(g.holder()).isNotEqualTo(before);
    assertThat(events).contains("a lost " + held.get("a") + " REVOKED",
        "b lost " + held.get("b") + " REVOKED");
    g.round();
    assertThat(store.releaseCalls).isZero();
    assertThat(g.heldNames()).isEmpty();
  }

  @Test
  void aBatchAnsweredAfterARevokeSetsNoToken() {
    LeaseGroup g = group("a", "b");
    store.beforeNextBatch(g::revoke);
    g.round();
    assertThat(g.heldNames()).isEmpty();
    assertThat(events).isEmpty();
  }

  @Test
  void removeStandsTheNameDownAtOnceAndTheNextRoundReleasesIt() {
    LeaseGroup g = group("a", "b");
    g.round();
    long a = g.currentToken("a");
    assertThat(g.remove("a")).isTrue();
    assertThat(g.remove("a")).isFalse();
    assertThat(g.currentToken("a")).isZero();
    assertThat(events).contains("a lost " + a + " CLOSED");
    g.round();
    assertThat(store.releaseBatches).isEqualTo(1);
    assertThat(store.inspect("a")).isEqualTo(new LeaseState.Free("a", a));
    assertThat(g.names()).containsExactly("b");
  }

  @Test
  void aNameRemovedWhileItsBatchIsInFlightIsReleasedNotKept() {
    LeaseGroup g = group("a", "b");
    store.beforeNextBatch(() -> g.remove("a"));
    g.round();
    assertThat(g.currentToken("a")).isZero();
    assertThat(g.currentToken("b")).isPositive();
    assertThat(store.inspect("a")).as("released at the end of the round")
        .isInstanceOf(LeaseState.Free.class);
  }

  @Test
  void aSupersededNameStandsDownAndTheOthersKeepTheirTokens() {
    LeaseGroup g = group("a", "b");
    g.round();
    Map<String, Long> held = tokens(g, "a", "b");
    store.real.deleteOutOfBand("a");
    store.real.acquireOrRenew("a", HolderId.generate(), TTL).orElseThrow();
    clock.advance(RENEW);
    g.round();
    assertThat(g.currentToken("a")).isZero();
    assertThat(g.currentToken("b")).isEqualTo(held.get("b"));
    assertThat(events).contains("a lost " + held.get("a") + " SUPERSEDED");
  }

  @Test
  void aRenewalAnsweringADifferentTokenReportsTokenAdvanced() {
    LeaseGroup g = group("a");
    g.round();
    long a = g.currentToken("a");
    clock.advance(RENEW);
    store.next(() -> Optional.of(new LeaseGrant("a", g.holder(), a + 5,
        clock.wallInstant().plus(TTL), TTL)));
    g.round();
    assertThat(g.currentToken("a")).isEqualTo(a + 5);
    assertThat(events).containsExactly("a acquired " + a, "a advanced " + a + "->" + (a + 5));
  }

  @Test
  void closeReleasesEveryHeldNameWithOneBatchAndReportsEachLoss() {
    LeaseGroup g = group("a", "b", "c");
    g.round();
    Map<String, Long> held = tokens(g, "a", "b", "c");
    g.close();
    assertThat(store.releaseBatches).isEqualTo(1);
    for (String n : held.keySet()) {
      assertThat(store.inspect(n)).isEqualTo(new LeaseState.Free(n, held.get(n)));
      assertThat(events).contains(n + " lost " + held.get(n) + " CLOSED");
    }
    assertThat(g.heldNames()).isEmpty();
    assertThat(g.round()).isEqualTo(Duration.ZERO);
    assertThatThrownBy(() -> g.add("d")).isInstanceOf(LeaseStoreClosedException.class);
  }

  @Test
  void configurationAndNamesAreValidatedWithMessagesThatSayWhatToChange() {
    assertThatThrownBy(() -> LeaseGroup.builder(store).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ttl is required");
    assertThatThrownBy(() -> LeaseGroup.builder(store).ttl(TTL)
        .renewInterval(Duration.ofMillis(1001)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("two failed renewals");
    assertThatThrownBy(() -> group().add("bad\uD800"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
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
    BrokenStores.ThrowingOnce broken = new BrokenStores.ThrowingOnce(
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
    LeaseGroup g = LeaseGroup.builder(new BrokenStores.HintsDownOnce(store)).ttl(TTL)
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

  /** Close releases what the group may hold, not names the store refused it. */
  @Test
  void closeSendsNoReleaseForNamesTheStoreRefused() {
    store.real.acquireOrRenew("b", HolderId.generate(), TTL).orElseThrow();
    LeaseGroup g = group("b");
    g.round();
    g.close();
    assertThat(store.releaseBatches).isZero();
  }
}
