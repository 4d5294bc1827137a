package dev.leases.redis;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * Opens a {@link RedisLeaseStore} that owns its client, from string settings:
 * <ul>
 *   <li>{@code uri} (required) — e.g. {@code redis://127.0.0.1:6379}
 *   <li>{@code keyPrefix} (optional) — default {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}
 *   <li>{@code commandTimeoutMs} (optional) — default 2000
 * </ul>
 * Unknown settings are rejected, so that a typo does not silently fall back to a default.
 */
public final class RedisLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: the Redis URI, e.g. {@code redis://host:6379/0} (required). */
  public static final String URI = "uri";
  /** Setting: the key prefix (default {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}). */
  public static final String KEY_PREFIX = "keyPrefix";
  /** Setting: the command timeout in milliseconds (default 2000). */
  public static final String COMMAND_TIMEOUT_MS = "commandTimeoutMs";

  private static final Set<String> KNOWN = Set.of(URI, KEY_PREFIX, COMMAND_TIMEOUT_MS);

  /** A factory; it keeps no state. */
  public RedisLeaseStoreFactory() {}

  @Override
  public LeaseStore open(Map<String, String> settings) {
    return builder(settings, "the Redis store").build();
  }

  /** A store builder from these settings, refusing unknown ones; {@code who} names the reader. */
  static RedisLeaseStore.Builder builder(Map<String, String> settings, String who) {
    for (String key : settings.keySet()) {
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting '" + key + "'; " + who + " knows "
            + KNOWN);
      }
    }
    RedisLeaseStore.Builder b = RedisLeaseStore.builder(LeaseStoreFactory.require(settings, URI));
    String prefix = settings.get(KEY_PREFIX);
    if (prefix != null) {
      b.keyPrefix(prefix);
    }
    String timeout = settings.get(COMMAND_TIMEOUT_MS);
    if (timeout != null) {
      try {
        b.commandTimeout(Duration.ofMillis(Long.parseLong(timeout.trim())));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("setting '" + COMMAND_TIMEOUT_MS + "' must be a whole"
            + " number of milliseconds, was '" + timeout + "'", e);
      }
    }
    return b;
  }
}
