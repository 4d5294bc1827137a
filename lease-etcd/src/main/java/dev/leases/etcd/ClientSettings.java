package dev.leases.etcd;

import dev.leases.LeaseArguments;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * What the builders of {@link EtcdLeaseStore} and {@link EtcdRunLedger} collect, validated as it is
 * set: the client (the caller's, or endpoints to build one for), the key prefix and the call
 * timeout.
 */
final class ClientSettings {

  private final Client client;
  private final List<URI> endpoints;
  private String keyPrefix = EtcdLeaseStore.DEFAULT_KEY_PREFIX;
  private Duration callTimeout = EtcdLeaseStore.DEFAULT_CALL_TIMEOUT;

  private ClientSettings(Client client, List<URI> endpoints) {
    this.client = client;
    this.endpoints = endpoints;
  }

  static ClientSettings of(Client client) {
    return new ClientSettings(Objects.requireNonNull(client, "client must not be null"), null);
  }

  static ClientSettings of(String... endpoints) {
    Objects.requireNonNull(endpoints, "endpoints must not be null");
    return new ClientSettings(null, EtcdLeaseStore.parseEndpoints(List.of(endpoints)));
  }

  void keyPrefix(String keyPrefix) {
    this.keyPrefix = KeyLayout.requirePrefix(keyPrefix);
  }

  void callTimeout(Duration callTimeout) {
    LeaseArguments.requireTimeout("callTimeout", callTimeout, EtcdLeaseStore.MAX_CALL_TIMEOUT);
    this.callTimeout = callTimeout;
  }

  /** The client to use (built now, with bounded calls, unless the caller gave one) and the rest. */
  Opened open() {
    KeyLayout layout = new KeyLayout(keyPrefix);
    if (client != null) {
      return new Opened(client, false, layout, callTimeout, Calls.CLIENT_ENDPOINTS);
    }
    return new Opened(Calls.ownClient(endpoints, callTimeout), true, layout, callTimeout,
        Calls.describe(endpoints));
  }

  /**
   * @param owned whether the client was built here (and is to be closed with its user)
   * @param endpoints how messages name the endpoints
   */
  record Opened(Client client, boolean owned, KeyLayout keys, Duration callTimeout,
      String endpoints) {}
}
