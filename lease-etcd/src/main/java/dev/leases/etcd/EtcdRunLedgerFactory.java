package dev.leases.etcd;

import dev.leases.once.RunLedgerFactory;
import java.util.Map;

/**
 * Opens an {@link EtcdRunLedger} (with its own client; close it) from the same string settings as
 * {@link EtcdLeaseStoreFactory}: {@code endpoints} (required, comma-separated), {@code keyPrefix}
 * (default {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX}; give it the store's), {@code callTimeoutMs}
 * (default 5000), {@code user} with {@code passwordFile} or {@code passwordEnv}, and the TLS files
 * {@code trustCertFile}, {@code clientCertFile}, {@code clientKeyFile}. Unknown settings are
 * refused by name.
 */
public final class EtcdRunLedgerFactory implements RunLedgerFactory {

  /** A factory; it keeps no state. */
  public EtcdRunLedgerFactory() {}

  @Override
  public EtcdRunLedger open(Map<String, String> settings) {
    return EtcdRunLedger.builder(EtcdLeaseStoreFactory.Settings.parse(settings, "etcd run ledger",
        System::getenv)).build();
  }
}
