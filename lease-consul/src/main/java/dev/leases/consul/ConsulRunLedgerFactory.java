package dev.leases.consul;

import dev.leases.once.RunLedgerFactory;
import java.util.Map;

/**
 * Opens a {@link ConsulRunLedger} that owns its Consul client, from the same string settings as
 * {@link ConsulLeaseStoreFactory} (give both the same {@code keyPrefix}):
 * <ul>
 *   <li>{@code url} (required) — the agent's HTTP address, e.g. {@code http://127.0.0.1:8500}
 *   <li>{@code keyPrefix} (optional) — default {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}; the
 *       records live in {@code <keyPrefix>/.once/}
 *   <li>{@code callTimeoutMs} (optional) — default 2000
 *   <li>{@code aclToken} (optional) — the ACL token to send
 * </ul>
 * Unknown settings are rejected by name. Close the ledger it returns.
 */
public final class ConsulRunLedgerFactory implements RunLedgerFactory {

  /** A factory; it keeps no state. */
  public ConsulRunLedgerFactory() {}

  @Override
  public ConsulRunLedger open(Map<String, String> settings) {
    return new ConsulRunLedger.Builder(ClientOptions.fromSettings(settings, "run ledger")).build();
  }
}
