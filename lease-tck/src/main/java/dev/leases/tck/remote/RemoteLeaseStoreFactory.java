package dev.leases.tck.remote;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Map;

/** Opens a {@link RemoteLeaseStore}: settings {@code port} (required), {@code timeout-ms} (default 2000). */
public final class RemoteLeaseStoreFactory implements LeaseStoreFactory {

  /** A factory; it keeps no state. */
  public RemoteLeaseStoreFactory() {}

  @Override
  public LeaseStore open(Map<String, String> settings) {
    int port;
    try {
      port = Integer.parseInt(LeaseStoreFactory.require(settings, "port"));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("setting 'port' must be a number, was "
          + settings.get("port"));
    }
    long timeoutMs = Long.parseLong(settings.getOrDefault("timeout-ms", "2000"));
    return new RemoteLeaseStore(port, Duration.ofMillis(timeoutMs));
  }
}
