package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.tck.once.LedgerRecipe;
import dev.leases.tck.once.RunLedgerTck;
import dev.leases.tck.process.StoreRecipe;

/**
 * The run-ledger kit on {@link ConsulRunLedger} and the Consul lease store, against the shared
 * agent; every client (and every child JVM) opens its own store and ledger through the factories,
 * with the settings of {@link ConsulLeaseStoreTckTest}.
 */
class ConsulRunLedgerKitTest extends RunLedgerTck {

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
