package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

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

  public static final String URL = "url";
  public static final String KEY_PREFIX = "keyPrefix";
  public static final String CALL_TIMEOUT_MS = "callTimeoutMs";
  public static final String ACL_TOKEN = "aclToken";

  private static final Set<String> KNOWN = Set.of(URL, KEY_PREFIX, CALL_TIMEOUT_MS, ACL_TOKEN);

  public ConsulLeaseStoreFactory() {}

  @Override
  public LeaseStore open(Map<String, String> settings) {
    requireKnown(settings, "store");
    ConsulLeaseStore.Builder b = ConsulLeaseStore.builder(LeaseStoreFactory.require(settings, URL));
    String prefix = settings.get(KEY_PREFIX);
    if (prefix != null) {
      b.keyPrefix(prefix);
    }
    callTimeout(settings).ifPresent(b::callTimeout);
    String token = settings.get(ACL_TOKEN);
    if (token != null) {
      b.aclToken(token);
    }
    return b.build();
  }

  /** Refuses settings other than {@link #URL}, {@link #KEY_PREFIX}, {@link #CALL_TIMEOUT_MS}, {@link #ACL_TOKEN}. */
  static void requireKnown(Map<String, String> settings, String what) {
    for (String key : settings.keySet()) {
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting '" + key + "'; the Consul " + what
            + " knows " + KNOWN);
      }
    }
  }

  /** The {@link #CALL_TIMEOUT_MS} setting, if given. */
  static Optional<Duration> callTimeout(Map<String, String> settings) {
    String timeout = settings.get(CALL_TIMEOUT_MS);
    if (timeout == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(Duration.ofMillis(Long.parseLong(timeout.trim())));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MS + "' must be a whole"
          + " number of milliseconds, was '" + timeout + "'", e);
    }
  }
}
