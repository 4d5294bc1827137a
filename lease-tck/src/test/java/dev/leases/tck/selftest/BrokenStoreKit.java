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
 * <p>It also implements the hooks of the kit's hint, client-clock and restart scenarios (first
 * proposed here), so that the broken stores those catch are reached through them.
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

  // ------------------------------------------------- hooks for the hint, clock and restart scenarios

  /**
   * Whether an out-of-band delete ({@link #deleteOutOfBand}) sends a release hint
   * (etcd watches and Consul blocking queries see it; a PostgreSQL {@code DELETE} sends no NOTIFY).
   */
  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /**
   * A client whose process clock is {@code clock}. A store that never reads the
   * caller's clock (every correct one) may ignore it.
   */
  @Override
  protected LeaseStore newStoreWithClientClock(LeaseClock clock) {
    LeaseStore s = backing.newClient(clock);
    ownClients.add(s);
    return s;
  }

  /**
   * Restarts the store's server the way it restarts in production (a Redis without
   * persistence comes back empty); clients reconnect. The kit's default would fail with
   * instructions, like {@link #storePort()}.
   */
  @Override
  protected void restartStore() {
    backing.restart();
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
