package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.tck.once.LedgerRecipe;
import dev.leases.tck.once.RunLedgerTck;
import dev.leases.tck.process.StoreRecipe;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.BeforeAll;

/**
 * The run-ledger kit on {@link EtcdRunLedger} and the etcd lease store, both under one random key
 * prefix on the shared test server (the settings of {@link EtcdLeaseStoreTckTest}).
 */
class EtcdRunLedgerKitTest extends RunLedgerTck {

  private static String prefix;

  @BeforeAll
  static void choosePrefix() {
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "once-kit-" + HexFormat.of().formatHex(b);
  }

  private static Map<String, String> settings() {
    return Map.of(EtcdLeaseStoreFactory.ENDPOINTS, EtcdServers.endpoints(),
        EtcdLeaseStoreFactory.KEY_PREFIX, prefix);
  }

  @Override
  protected LeaseStore newStore() {
    return new EtcdLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(EtcdLeaseStoreFactory.class, settings());
  }

  @Override
  protected RunLedger<?> newLedger() {
    return new EtcdRunLedgerFactory().open(settings());
  }

  @Override
  protected LedgerRecipe ledgerRecipe() {
    return new LedgerRecipe(EtcdRunLedgerFactory.class, settings());
  }
}
