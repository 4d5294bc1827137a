package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Opens an {@link EtcdLeaseStore} from string settings (for child JVMs and benchmark workers):
 * <ul>
 *   <li>{@code endpoints} (required): comma-separated, e.g.
 *       {@code http://127.0.0.1:2379,http://127.0.0.1:22379}
 *   <li>{@code keyPrefix} (optional, default {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX})
 *   <li>{@code callTimeoutMs} (optional, default 5000)
 * </ul>
 */
public final class EtcdLeaseStoreFactory implements LeaseStoreFactory {

  public static final String ENDPOINTS = "endpoints";
  public static final String KEY_PREFIX = "keyPrefix";
  public static final String CALL_TIMEOUT_MS = "callTimeoutMs";

  private static final Set<String> KNOWN = Set.of(ENDPOINTS, KEY_PREFIX, CALL_TIMEOUT_MS);

  public EtcdLeaseStoreFactory() {}

  @Override
  public LeaseStore open(Map<String, String> settings) {
    Set<String> unknown = new TreeSet<>(settings.keySet());
    unknown.removeAll(KNOWN);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown etcd store settings " + unknown + "; known are "
          + new TreeSet<>(KNOWN));
    }
    List<String> endpoints = Arrays.stream(LeaseStoreFactory.require(settings, ENDPOINTS).split(","))
        .map(String::trim).filter(s -> !s.isEmpty()).toList();
    EtcdLeaseStore.Builder b = EtcdLeaseStore.builder(endpoints.toArray(String[]::new));
    String prefix = settings.get(KEY_PREFIX);
    if (prefix != null) {
      b.keyPrefix(prefix);
    }
    String timeout = settings.get(CALL_TIMEOUT_MS);
    if (timeout != null) {
      long ms;
      try {
        ms = Long.parseLong(timeout.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MS + "' must be a whole number"
            + " of milliseconds, was '" + timeout + "'", e);
      }
      b.callTimeout(Duration.ofMillis(ms));
    }
    return b.build();
  }
}
