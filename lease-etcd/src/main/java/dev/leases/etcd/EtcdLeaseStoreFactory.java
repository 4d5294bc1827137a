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
    Settings s = Settings.parse(settings, "etcd store");
    EtcdLeaseStore.Builder b = EtcdLeaseStore.builder(s.endpoints().toArray(String[]::new));
    if (s.keyPrefix() != null) {
      b.keyPrefix(s.keyPrefix());
    }
    if (s.callTimeout() != null) {
      b.callTimeout(s.callTimeout());
    }
    return b.build();
  }

  /**
   * The settings every etcd factory of this module reads ({@link #ENDPOINTS}, {@link #KEY_PREFIX},
   * {@link #CALL_TIMEOUT_MS}); absent optional ones are null.
   */
  record Settings(List<String> endpoints, String keyPrefix, Duration callTimeout) {

    /**
     * @param what names the settings in messages, e.g. {@code etcd store}
     * @throws IllegalArgumentException for an unknown setting (named), a missing
     *     {@code endpoints} or a {@code callTimeoutMs} that is not a whole number
     */
    static Settings parse(Map<String, String> settings, String what) {
      Set<String> unknown = new TreeSet<>(settings.keySet());
      unknown.removeAll(KNOWN);
      if (!unknown.isEmpty()) {
        throw new IllegalArgumentException("unknown " + what + " settings " + unknown
            + "; known are " + new TreeSet<>(KNOWN));
      }
      List<String> endpoints = Arrays.stream(LeaseStoreFactory.require(settings, ENDPOINTS)
          .split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
      String timeout = settings.get(CALL_TIMEOUT_MS);
      Duration callTimeout = null;
      if (timeout != null) {
        try {
          callTimeout = Duration.ofMillis(Long.parseLong(timeout.trim()));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MS + "' must be a whole"
              + " number of milliseconds, was '" + timeout + "'", e);
        }
      }
      return new Settings(endpoints, settings.get(KEY_PREFIX), callTimeout);
    }
  }
}
