package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.util.Map;

/**
 * Opens a {@link ConsulLeaseStore} that owns its Consul client, from string settings:
 * <ul>
 *   <li>{@code url} (required) — the agent's HTTP address, e.g. {@code http://127.0.0.1:8500}
 *   <li>{@code keyPrefix} (optional) — default {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}
 *   <li>{@code callTimeoutMs} (optional) — default 2000
 *   <li>{@code aclToken} (optional) — the ACL token to send
 * </ul>
 * Unknown settings are rejected, so that a typo does not silently fall back to a default.
 */
public final class ConsulLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: the agent's HTTP URL (required). */
  public static final String URL = ClientOptions.URL;
  /** Setting: the key prefix. */
  public static final String KEY_PREFIX = ClientOptions.KEY_PREFIX;
  /** Setting: the call timeout in milliseconds. */
  public static final String CALL_TIMEOUT_MS = ClientOptions.CALL_TIMEOUT_MS;
  /** Setting: the ACL token. */
  public static final String ACL_TOKEN = ClientOptions.ACL_TOKEN;

  /** A factory; it keeps no state. */
  public ConsulLeaseStoreFactory() {}

  @Override
  public LeaseStore open(Map<String, String> settings) {
    return new ConsulLeaseStore.Builder(ClientOptions.fromSettings(settings, "store")).build();
  }
}
