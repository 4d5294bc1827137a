package dev.leases.consul;

import dev.leases.once.RunLedgerFactory;
import java.util.Map;

/**
 * Opens a {@link ConsulRunLedger} that owns its Consul client, from the same string settings as
 * {@link ConsulLeaseStoreFactory} ({@code url}, {@code keyPrefix}, {@code callTimeoutMs},
 * {@code aclTokenFile} | {@code aclTokenEnv}, {@code trustCertFile}, {@code clientCertFile},
 * {@code clientKeyFile}; give both the same {@code keyPrefix}: the records live in
 * {@code <keyPrefix>/.once/}). Unknown settings are rejected by name. Close the ledger it returns.
 */
public final class ConsulRunLedgerFactory implements RunLedgerFactory {

  /** A factory; it keeps no state. */
  public ConsulRunLedgerFactory() {}

  @Override
  public ConsulRunLedger open(Map<String, String> settings) {
    return new ConsulRunLedger.Builder(ClientOptions.fromSettings(settings, "run ledger",
        System::getenv)).build();
  }
}
