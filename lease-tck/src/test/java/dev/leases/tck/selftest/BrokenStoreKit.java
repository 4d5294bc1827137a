package dev.leases.tck.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.remote.LeaseStoreServer;
import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import dev.leases.time.LeaseClock;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestInstancePostProcessor;

/**
 * The kit against one {@link BrokenStore}, named by the launcher configuration parameter
 * {@value #STORE_PARAMETER}; only {@link KitCatchesBrokenStoresTest} runs it (surefire does not
 * match the name, and without the parameter every scenario is disabled with that explanation).
 *
 * <p>Like {@code InMemoryLeaseStoreTckTest}: clients in this JVM are {@link BrokenStore.Backing}
 * clients; child JVMs and the stall scenario reach one served client through a
 * {@link LeaseStoreServer}, so the defect lives in what is served and reaches them too.
 *
 * <p>Methods named {@code proposed...} are scenarios proposed for {@link LeaseStoreTck}, with the
 * hooks they need; the reference store passes them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokenStoreKit.Selected.class)
class BrokenStoreKit extends LeaseStoreTck {

  static final String STORE_PARAMETER = "leases.selftest.store";

  private BrokenStore broken;
  private BrokenStore.Backing backing;
  private LeaseStore served;
  private LeaseStoreServer server;
  private final List<LeaseStore> ownClients = new CopyOnWriteArrayList<>();

  @BeforeAll
  void serve() throws IOException {
    backing = broken.newBacking();
    served = backing.newClient();
    server = LeaseStoreServer.serve(served);
  }

  @AfterAll
  void stop() {
    server.close();
    served.close();
  }

  @AfterEach
  void closeOwnClients() {
    ownClients.forEach(LeaseStore::close);
    ownClients.clear();
  }

  @Override
  protected LeaseStore newStore() {
    return backing.newClient();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RemoteLeaseStoreFactory.class, Map.of("port", Integer.toString(server.port())));
  }

  @Override
  protected int storePort() {
    return server.port();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return backing.via(port, callTimeout);
  }

  @Override
  protected void deleteOutOfBand(String name) {
    backing.deleteOutOfBand(name);
  }

  // ------------------------------------------------- proposed scenarios and their hooks

  /**
   * Proposed hook: whether an out-of-band delete ({@link #deleteOutOfBand}) sends a release hint
   * (etcd watches and Consul blocking queries see it; a PostgreSQL {@code DELETE} sends no NOTIFY).
   */
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /**
   * Proposed hook: a client whose process clock is {@code clock}. A store that never reads the
   * caller's clock (every correct one) may ignore it.
   */
  protected LeaseStore newStoreWithClientClock(LeaseClock clock) {
    LeaseStore s = backing.newClient(clock);
    ownClients.add(s);
    return s;
  }

  /**
   * Proposed hook: restarts the store's server the way it restarts in production (a Redis without
   * persistence comes back empty); clients reconnect. The kit's default would fail with
   * instructions, like {@link #storePort()}.
   */
  protected void restartStore() {
    backing.restart();
  }

  private static LeaseGrant grant(java.util.Optional<LeaseGrant> g, String what) {
    return g.orElseThrow(() -> new AssertionError(what + ": expected a grant, got none"));
  }

  /**
   * Proposed: a store that declares release hints delivers one to another client's subscriber after
   * a release (and after an out-of-band delete when it says so). Each poll releases again, so a
   * subscription that becomes active a little after {@code onRelease} returns still passes; a store
   * that never delivers fails deterministically, unlike the handover-time scenarios, whose margin is
   * the follower's remaining sleep.
   */
  @Test
  void proposedReleaseAndDeleteHintsReachAnotherClientsSubscriber() {
    assertThat(deliversReleaseHints()).as("this scenario is for stores that declare hints").isTrue();
    LeaseStore holderClient = store();
    LeaseStore follower = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    Duration ttl = testTtl();
    AtomicInteger hints = new AtomicInteger();
    try (LeaseStore.Subscription sub = follower.onRelease(name, hints::incrementAndGet)) {
      await("a hint reaches another client's subscriber after a release")
          .atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(200))
          .until(() -> {
            grant(holderClient.acquireOrRenew(name, a, ttl), "acquire");
            assertThat(holderClient.release(name, a)).isTrue();
            return hints.get() > 0;
          });
      if (deliversHintsOnOutOfBandDelete()) {
        int before = hints.get();
        await("a hint reaches another client's subscriber after an out-of-band delete")
            .atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(200))
            .until(() -> {
              if (hints.get() > before) {
                return true;
              }
              grant(holderClient.acquireOrRenew(name, a, ttl), "acquire");
              int beforeDelete = hints.get();
              deleteOutOfBand(name);
              return hints.get() > beforeDelete;
            });
      }
    }
  }

  /**
   * Proposed: clients whose process clocks are an hour apart agree on expiry, because the store
   * judges it. The kit's {@code clientClockSkewedByAnHourChangesNoOutcome} skews the leader loop's
   * clock only, which no store ever sees, so a store that judges expiry by its caller's clock passes
   * it; this one gives the skewed clock to the store's clients.
   */
  @Test
  void proposedStoreClientsWithClocksAnHourApartAgreeOnExpiry() {
    Duration ttl = testTtl();
    for (Duration skew : List.of(Duration.ofHours(1), Duration.ofHours(-1))) {
      String name = leaseName();
      LeaseStore holderClient =
          newStoreWithClientClock(LeaseClock.skewed(LeaseClock.system(), skew.negated()));
      LeaseStore contender = newStoreWithClientClock(LeaseClock.skewed(LeaseClock.system(), skew));
      HolderId a = HolderId.generate();
      LeaseGrant g = grant(holderClient.acquireOrRenew(name, a, ttl), "acquire");
      assertThat(contender.acquireOrRenew(name, HolderId.generate(), ttl))
          .as("skew %s: a contender whose clock is %s from the holder's must be refused while the"
              + " lease is held: expiry is judged by the store's clock", skew, skew.multipliedBy(2))
          .isEmpty();
      LeaseState seen = contender.inspect(name);
      assertThat(seen).as("skew %s: the contender's view", skew).isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) seen).remaining())
          .as("skew %s: remaining as measured by the store, whatever the caller's clock", skew)
          .isLessThanOrEqualTo(g.ttl().plusMillis(50));
    }
  }

  /**
   * Proposed: tokens never go backwards across a restart of the store (invariant 3; Redis without
   * persistence must clamp its counter to the server's clock), for the name it knew and for the
   * store-wide bound.
   */
  @Test
  void proposedTokensNeverGoBackwardsAcrossAStoreRestart() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    Duration ttl = testTtl();
    long last = 0;
    for (int i = 0; i < 3; i++) {
      last = grant(s.acquireOrRenew(name, a, ttl), "acquire " + i).token();
      assertThat(s.release(name, a)).isTrue();
    }
    restartStore();
    LeaseStore after = store();
    await("the store answers after its restart").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100))
        .ignoreExceptionsInstanceOf(dev.leases.LeaseStoreUnavailableException.class)
        .until(() -> after.inspect(name) != null);
    assertThat(after.token(name).orElse(0)).as("token(name) after a restart of the store: it must"
        + " still fence every token issued before").isGreaterThanOrEqualTo(last);
    LeaseGrant g = grant(after.acquireOrRenew(name, HolderId.generate(), ttl), "acquire after restart");
    assertThat(g.token()).as("the first grant after a restart of the store").isGreaterThan(last);
  }

  /** Runs the kit only when the self-test names a broken store, and hands that store over. */
  static final class Selected implements ExecutionCondition, TestInstancePostProcessor {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      return context.getConfigurationParameter(STORE_PARAMETER).isPresent()
          ? ConditionEvaluationResult.enabled("broken store named")
          : ConditionEvaluationResult.disabled("run by KitCatchesBrokenStoresTest, which names the"
              + " broken store in the configuration parameter " + STORE_PARAMETER);
    }

    @Override
    public void postProcessTestInstance(Object instance, ExtensionContext context) {
      ((BrokenStoreKit) instance).broken = BrokenStore.valueOf(
          context.getConfigurationParameter(STORE_PARAMETER).orElseThrow());
    }
  }
}
