package dev.leases.leader;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.testing.LogCapture;
import dev.leases.time.ManualClock;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** The leader loop driven step by step with a manual clock and a scripted store: no sleeps. */
class LeaderLoopTest {

  private static final String NAME = "nightly-invoice-run";
  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration RENEW = Duration.ofSeconds(1);
  private static final Duration MARGIN = Duration.ofMillis(300);

  private final ManualClock clock = new ManualClock();
  private final ScriptedStore store = new ScriptedStore(clock);
  private final List<String> events = Collections.synchronizedList(new ArrayList<>());

  private final LeaderListener recorder = new LeaderListener() {
    @Override
    public void acquired(String name, long token) {
      events.add("acquired " + token);
    }

    @Override
    public void lost(String name, long token, LossReason reason) {
      events.add("lost " + token + " " + reason);
    }

    @Override
    public void tokenAdvanced(String name, long oldToken, long newToken) {
      events.add("advanced " + oldToken + "->" + newToken);
    }
  };

  private LeaderLoop loop() {
    return LeaderLoop.builder(store, NAME).ttl(TTL).clock(clock).listener(recorder)
        .storeCalls(StoreCalls.direct()).listenerExecutor(Runnable::run).build();
  }

  private LeaseGrant otherTakes(HolderId other) {
    return store.real.acquireOrRenew(NAME, other, TTL).orElseThrow();
  }

  @Test
  void startsAsFollowerThenAcquiresAndRenewsAtAThirdOfTheTtl() {
    LeaderLoop loop = loop();
    assertThat(loop.currentToken()).isZero();
    assertThat(loop.renewInterval()).isEqualTo(RENEW);
    Duration next = loop.step();
    long token = loop.currentToken();
    assertThat(token).isPositive();
    assertThat(next).isEqualTo(RENEW);
    assertThat(events).containsExactly("acquired " + token);
    for (int i = 0; i < 5; i++) {
      clock.advance(next);
      next = loop.step();
      assertThat(loop.currentToken()).isEqualTo(token);
    }
    assertThat(events).containsExactly("acquired " + token);
    assertThat(store.acquireCalls).isEqualTo(6);
  }

  @Test
  void failedRenewalIsTreatedAsLostAtOnceThenReacquiredWithTheSameToken() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    clock.advance(RENEW);
    store.failNext();
    Duration retry = loop.step();
    assertThat(loop.currentToken()).as("unknown is no").isZero();
    assertThat(events).containsExactly("acquired " + token, "lost " + token + " RENEWAL_FAILED");
    clock.advance(retry);
    loop.step();
    assertThat(loop.currentToken()).as("the store still had our unexpired lease").isEqualTo(token);
  }

  @Test
  void tokenDropsToZeroAtTheLocalDeadlineBeforeTheStoreExpiresTheLease() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    clock.advance(TTL.minus(MARGIN).minusMillis(1));
    assertThat(loop.currentToken()).isEqualTo(token);
    clock.advance(Duration.ofMillis(1));
    assertThat(loop.currentToken()).as("no loop step needed to drop the token").isZero();
    assertThat(store.inspect(NAME)).as("the store still holds it: we stood down first")
        .isInstanceOf(LeaseState.Held.class);
    loop.step();
    assertThat(events).contains("lost " + token + " LOCAL_DEADLINE");
  }

  @Test
  void localDeadlineCountsFromWhenTheRenewalWasSentNotAnswered() {
    LeaderLoop loop = loop();
    Duration slowAnswer = Duration.ofMillis(1500);
    store.next(() -> {
      Optional<LeaseGrant> g = store.real.acquireOrRenew(NAME, loop.holder(), TTL);
      clock.advance(slowAnswer);
      return g;
    });
    Duration next = loop.step();
    long token = loop.currentToken();
    assertThat(token).isPositive();
    assertThat(next).as("the answer took longer than the renew interval: renew at once")
        .isEqualTo(Duration.ZERO);
    clock.advance(TTL.minus(MARGIN).minus(slowAnswer));
    assertThat(loop.currentToken()).as("deadline = send + ttl - margin").isZero();
  }

  @Test
  void suspendedVmIsDetectedAndTheLoopContendsWithAFreshHolderId() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    HolderId before = loop.holder();
    clock.advance(Duration.ofMillis(500));
    clock.suspend(Duration.ofSeconds(40));
    assertThat(loop.currentToken()).as("wall deadline passed during the suspension").isZero();
    loop.step();
    assertThat(events).contains("lost " + token + " CLOCK_JUMP");
    assertThat(loop.holder()).isNotEqualTo(before);
    assertThat(loop.currentToken()).as("old id still holds it in the store").isZero();
    clock.advance(TTL);
    loop.step();
    assertThat(loop.currentToken()).as("re-acquired under the fresh id").isGreaterThan(token);
  }

  @Test
  void wallClockSteppedBackIsAClockJump() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    clock.advance(RENEW);
    clock.jumpWall(Duration.ofHours(-1));
    loop.step();
    assertThat(events).contains("lost " + token + " CLOCK_JUMP");
  }

  @Test
  void smallDisagreementWithinToleranceIsNotAJump() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    clock.advance(RENEW);
    clock.jumpWall(MARGIN.minusMillis(50));
    loop.step();
    assertThat(loop.currentToken()).isEqualTo(token);
    assertThat(events).containsExactly("acquired " + token);
  }

  @Test
  void supersededHolderStandsDownAndFollowsUntilTheExpiryItRead() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    store.real.deleteOutOfBand(NAME);
    LeaseGrant other = otherTakes(HolderId.generate());
    clock.advance(RENEW);
    Duration wait = loop.step();
    assertThat(loop.currentToken()).isZero();
    assertThat(events).containsExactly("acquired " + token, "lost " + token + " SUPERSEDED");
    assertThat(other.token()).isGreaterThan(token);
    assertThat(wait).as("sleep until the other's lease would expire")
        .isEqualTo(TTL.minus(RENEW).plusMillis(1));
  }

  @Test
  void renewalAnsweringADifferentTokenReportsTokenAdvanced() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    clock.advance(RENEW);
    store.next(() -> Optional.of(new LeaseGrant(NAME, loop.holder(), token + 5,
        clock.wallInstant().plus(TTL), TTL)));
    loop.step();
    assertThat(loop.currentToken()).isEqualTo(token + 5);
    assertThat(events).containsExactly("acquired " + token, "advanced " + token + "->" + (token + 5));
  }

  @Test
  void followerRetriesQuicklyWhenItLostARaceForAFreeLease() {
    LeaderLoop loop = loop();
    store.next(Optional::empty);
    Duration wait = loop.step();
    assertThat(wait).isLessThanOrEqualTo(Duration.ofMillis(50));
    assertThat(loop.currentToken()).isZero();
  }

  @Test
  void closeReleasesTheLeaseAndReportsLoss() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    loop.close();
    assertThat(store.releaseCalls).isEqualTo(1);
    assertThat(store.inspect(NAME)).isEqualTo(new LeaseState.Free(NAME, token));
    assertThat(events).containsExactly("acquired " + token, "lost " + token + " CLOSED");
    assertThat(loop.currentToken()).isZero();
    assertThat(loop.step()).isEqualTo(Duration.ZERO);
  }

  @Test
  void aThrowingListenerDoesNotStopTheLoop() {
    LeaderLoop loop = LeaderLoop.builder(store, NAME).ttl(TTL).clock(clock)
        .listener(new LeaderListener() {
          @Override
          public void acquired(String name, long token) {
            throw new IllegalStateException("listener bug");
          }
        }).listener(recorder).storeCalls(StoreCalls.direct()).listenerExecutor(Runnable::run).build();
    loop.step();
    assertThat(loop.currentToken()).isPositive();
    assertThat(events).hasSize(1);
  }

  @Test
  void revokeStandsDownAtOnceAndContendsUnderAFreshHolderId() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    HolderId before = loop.holder();
    loop.revoke();
    assertThat(loop.currentToken()).as("revoked: no token at once, before any step").isZero();
    assertThat(loop.holder()).isNotEqualTo(before);
    assertThat(events).containsExactly("acquired " + token, "lost " + token + " REVOKED");
    loop.step();
    assertThat(loop.currentToken()).as("the old id's tenure still runs in the store").isZero();
    clock.advance(TTL);
    loop.step();
    assertThat(loop.currentToken()).as("re-acquired under the fresh id").isGreaterThan(token);
  }

  @Test
  void aGrantAnsweredAfterARevokeDoesNotMakeTheLoopLeader() {
    LeaderLoop[] self = new LeaderLoop[1];
    store.next(() -> {
      Optional<LeaseGrant> g = store.real.acquireOrRenew(NAME, self[0].holder(), TTL);
      self[0].revoke();
      return g;
    });
    self[0] = loop();
    self[0].step();
    assertThat(self[0].currentToken()).as("the grant went to the id revoked while it was in"
        + " flight").isZero();
    assertThat(events).isEmpty();
  }

  @Test
  void awaitLeadershipOnALoopThatWasNeverStartedThrows() {
    LeaderLoop loop = loop();
    assertThatThrownBy(() -> loop.awaitLeadership(Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("start()");
  }

  @Test
  void failedAcquireAttemptsAreLoggedAtWarnOnceThenRateLimitedAndTheRecoveryAtInfo() {
    LeaderLoop loop = loop();
    String log = LogCapture.during(() -> {
      for (int i = 0; i < 30; i++) {
        store.next(() -> {
          throw new dev.leases.LeaseStoreUnavailableException("password authentication failed",
              new IllegalStateException("FATAL: password authentication failed for user \"app\""));
        });
        clock.advance(loop.step());
      }
      clock.advance(Duration.ofMinutes(1));
      store.failNext();
      clock.advance(loop.step());
      loop.step();
    });
    assertThat(loop.currentToken()).isPositive();
    assertThat(log.lines().filter(l -> l.contains("WARN") && l.contains("acquire attempt failed")))
        .as(log).hasSize(1);
    assertThat(log).contains("password authentication failed for user \"app\"");
    assertThat(log.lines().filter(l -> l.contains("WARN") && l.contains("still failing")))
        .as("one reminder after a minute, with the count").hasSize(1)
        .allMatch(l -> l.contains("31 attempts"));
    assertThat(log).contains("works again after 31 failed attempts");
  }

  @Test
  void configurationIsValidatedWithMessagesThatSayWhatToChange() {
    assertThatThrownBy(() -> LeaderLoop.builder(store, NAME).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ttl is required");
    assertThatThrownBy(() -> LeaderLoop.builder(store, NAME).ttl(TTL)
        .renewInterval(Duration.ofMillis(1001)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("two failed renewals").hasMessageContaining("PT1S");
    assertThatThrownBy(() -> LeaderLoop.builder(store, NAME).ttl(Duration.ofMillis(10)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0.1S")
        .hasMessageContaining("PT1H");
    assertThatThrownBy(() -> LeaderLoop.builder(store, NAME).ttl(TTL)
        .standDownMargin(Duration.ofSeconds(1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("standDownMargin");
    assertThatThrownBy(() -> LeaderLoop.builder(store, " ").ttl(TTL).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
    assertThatThrownBy(() -> LeaderLoop.builder(null, NAME))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("store");
  }

  @Test
  void startedLoopLeadsAndHandsOverOnClose() throws Exception {
    InMemoryLeaseStore shared = new InMemoryLeaseStore();
    try (LeaderLoop a = LeaderLoop.builder(shared, NAME).ttl(Duration.ofSeconds(2)).start();
        LeaderLoop b = LeaderLoop.builder(shared.newClient(), NAME).ttl(Duration.ofSeconds(2))
            .build()) {
      long ta = a.awaitLeadership(Duration.ofSeconds(10));
      assertThat(ta).isPositive();
      b.start();
      assertThat(b.currentToken()).isZero();
      a.close();
      long tb = b.awaitLeadership(Duration.ofSeconds(10));
      assertThat(tb).isGreaterThan(ta);
    }
  }

  /**
   * A VM suspended (or snapshotted) while a renewal is on its way must count as a clock jump: a
   * restored copy would otherwise keep the holder id and re-acquire under it, and two copies with
   * one id share one token that the fence cannot tell apart.
   */
  @Test
  void aSuspensionDuringAStoreCallIsAClockJumpAtTheNextStep() {
    LeaderLoop loop = loop();
    loop.step();
    long token = loop.currentToken();
    HolderId before = loop.holder();
    clock.advance(RENEW);
    store.next(() -> {
      Optional<LeaseGrant> g = store.real.acquireOrRenew(NAME, before, TTL);
      clock.suspend(Duration.ofSeconds(40));
      return g;
    });
    loop.step();
    assertThat(loop.currentToken()).as("the wall deadline passed during the suspension").isZero();
    loop.step();
    assertThat(events).as("the suspension happened within the loop's watch")
        .contains("lost " + token + " CLOCK_JUMP");
    assertThat(loop.holder()).as("a fresh holder id after the suspension").isNotEqualTo(before);
  }

  /**
   * A renewal that fails with an Error (a client missing a class at run time:
   * NoClassDefFoundError, which a Netty mismatch produces) is a renewal that threw: unknown is no.
   * The loop must stand down, say so, and keep contending, not die silently with its listeners
   * still believing it leads.
   */
  @Test
  void aRenewalThatThrowsAnErrorStandsDownAndTheLoopGoesOn() throws Exception {
    BrokenStores.ThrowingOnce broken = new BrokenStores.ThrowingOnce(new InMemoryLeaseStore(),
        new NoClassDefFoundError("io/netty/channel/MultiThreadIoEventLoopGroup"));
    try (LeaderLoop loop = LeaderLoop.builder(broken, NAME).ttl(TTL).listener(recorder).start()) {
      long token = loop.awaitLeadership(Duration.ofSeconds(10));
      assertThat(token).isPositive();
      broken.armed.set(true);
      waitUntil("the loop hears of the failed renewal", Duration.ofSeconds(10),
          () -> events.contains("lost " + token + " RENEWAL_FAILED"));
      waitUntil("the loop leads again", Duration.ofSeconds(10), () -> loop.currentToken() != 0);
    }
  }

  /**
   * A listener that throws an Error (an assertion in a test listener, a linkage error) is logged
   * and ignored like one that throws an exception: later events of the loop are still delivered.
   */
  @Test
  void aListenerThatThrowsAnErrorDoesNotSilenceLaterEvents() throws Exception {
    ExecutorService listenerPool = Executors.newSingleThreadExecutor();
    LeaderListener failing = new LeaderListener() {
      @Override
      public void acquired(String name, long token) {
        throw new AssertionError("listener assertion");
      }
    };
    try (LeaderLoop loop = LeaderLoop.builder(new InMemoryLeaseStore(), NAME).ttl(TTL)
        .listener(failing).listener(recorder).listenerExecutor(listenerPool).start()) {
      long token = loop.awaitLeadership(Duration.ofSeconds(10));
      assertThat(token).isPositive();
      loop.revoke();
      waitUntil("the loss after the throwing callback is delivered", Duration.ofSeconds(10),
          () -> events.contains("lost " + token + " REVOKED"));
    } finally {
      listenerPool.shutdownNow();
    }
  }

  /**
   * A revoke that lands just after a grant was applied (here: from the log line that announces
   * it, on the loop's thread, as a revoke from another thread could at that instant): listeners
   * must hear the grant before the loss, never "lost" then "acquired" for a loop that is not
   * leader.
   */
  @Test
  void aRevokeRightAfterAGrantIsHeardAfterTheGrant() {
    LeaderLoop loop = loop();
    PrintStream original = System.err;
    AtomicBoolean revoked = new AtomicBoolean();
    StringBuilder line = new StringBuilder();
    System.setErr(new PrintStream(new OutputStream() {
      @Override
      public void write(int b) {
        original.write(b);
        line.append((char) b);
        if (b == '\n') {
          if (line.indexOf("leader with token") >= 0 && revoked.compareAndSet(false, true)) {
            loop.revoke();
          }
          line.setLength(0);
        }
      }
    }, true, StandardCharsets.UTF_8));
    try {
      loop.step();
    } finally {
      System.setErr(original);
    }
    assertThat(revoked).isTrue();
    assertThat(loop.currentToken()).isZero();
    assertThat(events).as("the last event a listener hears must match the loop's state")
        .containsExactly("acquired 1", "lost 1 REVOKED");
  }

  /**
   * A renewal whose outcome is unknown stands the loop down, but the store may still hold its
   * lease: a clean close must release it so that a follower takes over at once, not after a TTL.
   */
  @Test
  void closeAfterAFailedRenewalReleasesWhatTheStoreMayStillHold() {
    LeaderLoop loop = loop();
    loop.step();
    clock.advance(RENEW);
    store.failNext();
    loop.step();
    assertThat(loop.currentToken()).isZero();
    assertThat(store.inspect(NAME)).as("unknown: the store kept our lease")
        .isInstanceOf(LeaseState.Held.class);
    loop.close();
    assertThat(store.inspect(NAME)).as("a clean close hands over at once")
        .isInstanceOf(LeaseState.Free.class);
  }

  /**
   * Release hints are only hints: a store that cannot subscribe when the loop starts must not
   * leave the loop marked started but never scheduled (a second start() returned at once and the
   * loop never contended). The loop contends and polls.
   */
  @Test
  void aLoopWhoseReleaseHintsCannotBeSubscribedStillContends() throws Exception {
    BrokenStores.HintsDownOnce flaky = new BrokenStores.HintsDownOnce(new InMemoryLeaseStore());
    LeaderLoop loop = LeaderLoop.builder(flaky, NAME).ttl(TTL).build();
    try {
      try {
        loop.start();
      } catch (LeaseStoreUnavailableException e) {
        loop.start(); // a caller that retries start()
      }
      assertThat(loop.awaitLeadership(Duration.ofSeconds(10))).as("the loop leads").isPositive();
    } finally {
      loop.close();
    }
  }

  /** Close releases what the loop may hold, not a lease the store refused it. */
  @Test
  void closeOfAFollowerSendsNoRelease() {
    otherTakes(HolderId.generate());
    LeaderLoop loop = loop();
    loop.step();
    loop.close();
    assertThat(store.releaseCalls).isZero();
  }
}
