package dev.leases.leader;

import static org.assertj.core.api.Assertions.assertThat;

import static dev.leases.testing.Conditions.waitUntil;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
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

/**
 * Review findings on {@link LeaderLoop}: interleavings the step-by-step tests did not cover,
 * driven with a manual clock and a scripted store.
 */
class LeaderLoopReviewTest {

  private static final String NAME = "review-lease";
  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration RENEW = Duration.ofSeconds(1);

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
  };

  private LeaderLoop loop() {
    return LeaderLoop.builder(store, NAME).ttl(TTL).clock(clock).listener(recorder)
        .storeCalls(StoreCalls.direct()).listenerExecutor(Runnable::run).build();
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

  /** Throws {@code error} from the next acquireOrRenew once armed, as a broken client can. */
  static final class ThrowingOnce extends ForwardingLeaseStore {
    final AtomicBoolean armed = new AtomicBoolean();
    final Error error;

    ThrowingOnce(LeaseStore delegate, Error error) {
      super(delegate);
      this.error = error;
    }

    @Override
    public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
      if (armed.compareAndSet(true, false)) {
        throw error;
      }
      return super.acquireOrRenew(name, holder, ttl);
    }
  }

  /**
   * A renewal that fails with an Error (a client missing a class at run time:
   * NoClassDefFoundError, which a Netty mismatch produces) is a renewal that threw: unknown is no.
   * The loop must stand down, say so, and keep contending, not die silently with its listeners
   * still believing it leads.
   */
  @Test
  void aRenewalThatThrowsAnErrorStandsDownAndTheLoopGoesOn() throws Exception {
    ThrowingOnce broken = new ThrowingOnce(new InMemoryLeaseStore(),
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

  /** Refuses the first release-hint subscription, as a store that cannot reach its server does. */
  static final class HintsDownOnce extends ForwardingLeaseStore {
    final AtomicBoolean refused = new AtomicBoolean();

    HintsDownOnce(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Subscription onRelease(String name, Runnable listener) {
      if (refused.compareAndSet(false, true)) {
        throw new LeaseStoreUnavailableException("release hints: connection refused", null);
      }
      return super.onRelease(name, listener);
    }
  }

  /**
   * Release hints are only hints: a store that cannot subscribe when the loop starts must not
   * leave the loop marked started but never scheduled (a second start() returned at once and the
   * loop never contended). The loop contends and polls.
   */
  @Test
  void aLoopWhoseReleaseHintsCannotBeSubscribedStillContends() throws Exception {
    HintsDownOnce flaky = new HintsDownOnce(new InMemoryLeaseStore());
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
}
