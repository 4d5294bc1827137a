package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.tck.once.LedgerRecipe;
import dev.leases.tck.once.RunLedgerTck;
import dev.leases.tck.process.StoreRecipe;
import java.time.Duration;

/**
 * The run-ledger kit on {@link ConsulRunLedger} and the Consul lease store, against the shared
 * agent; every client (and every child JVM) opens its own store and ledger through the factories,
 * with the settings of {@link ConsulLeaseStoreTckTest}.
 */
class ConsulRunLedgerKitTest extends RunLedgerTck {

  /**
   * 2 s rather than the kit's 1 s. {@code ExactlyOnce} bounds each lease-store call by a third of
   * the TTL; a child JVM's first acquire on Consul (a KV read, a session, a transaction, each code
   * path used for the first time while ten JVMs start on a loaded machine) took more than 333 ms in
   * the ten-JVM scenario and surfaced as ERROR outcomes. 667 ms leaves room for that.
   */
  @Override
  protected Duration testTtl() {
    return Duration.ofSeconds(2);
  }

  @Override
  protected LeaseStore newStore() {
    return new ConsulLeaseStoreFactory().open(ConsulLeaseStoreTckTest.settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(ConsulLeaseStoreFactory.class, ConsulLeaseStoreTckTest.settings());
  }

  @Override
  protected RunLedger<?> newLedger() {
    return new ConsulRunLedgerFactory().open(ConsulLeaseStoreTckTest.settings());
  }

  @Override
  protected LedgerRecipe ledgerRecipe() {
    return new LedgerRecipe(ConsulRunLedgerFactory.class, ConsulLeaseStoreTckTest.settings());
  }
}
