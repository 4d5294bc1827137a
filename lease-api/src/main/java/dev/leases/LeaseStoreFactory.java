package dev.leases;

import java.util.Map;

/**
 * Opens a {@link LeaseStore} from plain string settings, so that another process (a TCK child JVM,
 * a benchmark worker) can open a client of the same backend. Implementations have a public no-arg
 * constructor and validate the settings with messages that name the missing or bad key.
 */
public interface LeaseStoreFactory {

  /**
   * Opens a store from its settings (keys named by the factory).
   *
   * @throws IllegalArgumentException for a missing or malformed setting, naming it
   */
  LeaseStore open(Map<String, String> settings);

  /** Returns {@code settings.get(key)}, or throws an {@link IllegalArgumentException} naming it. */
  static String require(Map<String, String> settings, String key) {
    String v = settings.get(key);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("setting '" + key + "' is required; got " + settings.keySet());
    }
    return v;
  }
}
