package dev.leases.redis;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.tck.once.LedgerRecipe;
import dev.leases.tck.once.RunLedgerTck;
import dev.leases.tck.process.StoreRecipe;
import java.util.Map;

/** The run-ledger kit on {@link RedisRunLedger} and the Redis lease store, on the shared server. */
class RedisRunLedgerKitTest extends RunLedgerTck {

  /** The store kit's settings: the ledger's records sit beside the leases. */
  private static Map<String, String> settings() {
    return Map.of(RedisLeaseStoreFactory.URI, RedisServers.sharedUri());
  }

  @Override
  protected LeaseStore newStore() {
    return new RedisLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RedisLeaseStoreFactory.class, settings());
  }

  @Override
  protected RunLedger<?> newLedger() {
    return new RedisRunLedgerFactory().open(settings());
  }

  @Override
  protected LedgerRecipe ledgerRecipe() {
    return new LedgerRecipe(RedisRunLedgerFactory.class, settings());
  }
}
