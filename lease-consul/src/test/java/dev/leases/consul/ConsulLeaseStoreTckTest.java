package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.kiwiproject.consul.Consul;

/**
 * The compatibility kit against the shared Consul agent. Every client (and the child JVMs) opens its
 * own store with its own HTTP client through {@link ConsulLeaseStoreFactory}, as separate processes
 * would.
 */
class ConsulLeaseStoreTckTest extends LeaseStoreTck {

  private static Consul admin;
  /** Only lays out keys, exactly as every store with the default prefix does. */
  private static ConsulLeaseStore layout;

  @BeforeAll
  static void open() {
    admin = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false).build();
    layout = ConsulLeaseStore.builder(admin).build();
  }

  @AfterAll
  static void close() {
    layout.close();
    admin.destroy();
  }

  /** The settings every client of the kits opens its store with. */
  static Map<String, String> settings() {
    return Map.of(ConsulLeaseStoreFactory.URL, ConsulServers.sharedUrl());
  }

  @Override
  protected LeaseStore newStore() {
    return new ConsulLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(ConsulLeaseStoreFactory.class, settings());
  }

  /**
   * Consul invalidates a session up to 2 x TTL after its last renewal: one TTL later than the
   * expiry the grant promised.
   */
  @Override
  protected Duration expirySlack() {
    return testTtl();
  }

  /** The shared agent's HTTP port, for the kit's stalled-proxy scenario. */
  @Override
  protected int storePort() {
    return java.net.URI.create(ConsulServers.sharedUrl()).getPort();
  }

  /** A store that owns its client, on {@code 127.0.0.1:port}, with {@code callTimeout}. */
  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return ConsulLeaseStore.builder("http://127.0.0.1:" + port).callTimeout(callTimeout).build();
  }

  /** An operator's {@code consul kv delete} of the lease key, locked or not. */
  @Override
  protected void deleteOutOfBand(String name) {
    admin.keyValueClient().deleteKey(layout.keyOf(name));
  }
}
