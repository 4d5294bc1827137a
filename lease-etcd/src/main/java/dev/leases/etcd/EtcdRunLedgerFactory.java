package dev.leases.etcd;

import dev.leases.once.RunLedgerFactory;
import java.util.Map;

/**
 * Opens an {@link EtcdRunLedger} (with its own client; close it) from the same string settings as
 * {@link EtcdLeaseStoreFactory}: {@code endpoints} (required, comma-separated), {@code keyPrefix}
 * (default {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX}; give it the store's) and
 * {@code callTimeoutMs} (default 5000). Unknown settings are refused by name.
 */
public final class EtcdRunLedgerFactory implements RunLedgerFactory {

  public EtcdRunLedgerFactory() {}

  @Override
  public EtcdRunLedger open(Map<String, String> settings) {
    EtcdLeaseStoreFactory.Settings s = EtcdLeaseStoreFactory.Settings.parse(settings,
        "etcd run ledger");
    EtcdRunLedger.Builder b = EtcdRunLedger.builder(s.endpoints().toArray(String[]::new));
    if (s.keyPrefix() != null) {
      b.keyPrefix(s.keyPrefix());
    }
    if (s.callTimeout() != null) {
      b.callTimeout(s.callTimeout());
    }
    return b.build();
  }
}
