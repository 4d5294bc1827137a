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
 * The compatibility kit against a Consul server of its own: a single server with a data directory
 * and {@code session_ttl_min = "1s"} ({@link ConsulProcess#persistentServer()}), because the kit
 * restarts it ({@link #restartStore()}) and the module's shared agent is a {@code -dev} agent that
 * keeps everything in memory (restarted, it would start again from Raft index 1: a restart no
 * production server does). With {@code $LEASES_CONSUL_URL} set, the kit runs against that agent and
 * only the restart scenario fails, saying why. Every client (and the child JVMs) opens its own
 * store with its own HTTP client through {@link ConsulLeaseStoreFactory}, as separate processes
 * would.
 */
class ConsulLeaseStoreTckTest extends LeaseStoreTck {

  /** The kit's own server; null when {@code $LEASES_CONSUL_URL} names the agent. */
  private static ConsulProcess server;
  private static String url;
  private static Consul admin;
  /** Only lays out keys, exactly as every store with the default prefix does. */
  private static ConsulLeaseStore layout;

  @BeforeAll
  static void open() throws Exception {
    String external = System.getenv(ConsulServers.ENV_VAR);
    if (external != null && !external.isBlank()) {
      url = ConsulServers.sharedUrl();
    } else {
      server = ConsulProcess.persistentServer();
      url = server.url();
    }
    admin = Consul.builder().withUrl(url).withPing(false).build();
    layout = ConsulLeaseStore.builder(admin).build();
  }

  @AfterAll
  static void close() {
    layout.close();
    admin.destroy();
    if (server != null) {
      server.close();
      server = null;
    }
  }

  /** The settings every client of the run-ledger kit opens its store with: the shared agent. */
  static Map<String, String> settings() {
    return Map.of(ConsulLeaseStoreFactory.URL, ConsulServers.sharedUrl());
  }

  /** The settings every client of this kit opens its store with: the kit's server. */
  private static Map<String, String> kitSettings() {
    return Map.of(ConsulLeaseStoreFactory.URL, url);
  }

  @Override
  protected LeaseStore newStore() {
    return new ConsulLeaseStoreFactory().open(kitSettings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(ConsulLeaseStoreFactory.class, kitSettings());
  }

  /**
   * Consul invalidates a session up to 2 x TTL after its last renewal: one TTL later than the
   * expiry the grant promised.
   */
  @Override
  protected Duration expirySlack() {
    return testTtl();
  }

  /** The kit's server's HTTP port, for the kit's stalled-proxy scenario. */
  @Override
  protected int storePort() {
    return java.net.URI.create(url).getPort();
  }

  /** A store that owns its client, on {@code 127.0.0.1:port}, with {@code callTimeout}. */
  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return ConsulLeaseStore.builder("http://127.0.0.1:" + port).callTimeout(callTimeout).build();
  }

  /**
   * Stops the kit's server (SIGTERM, as {@code systemctl restart} does) and starts it again on the
   * same ports and data directory; returns once it has a leader and its node is registered.
   * Sessions and locks survive in its Raft state; Raft indexes (the tokens) continue.
   */
  @Override
  protected void restartStore() throws Exception {
    if (server == null) {
      throw new AssertionError("restarting Consul needs the local server this kit starts; it runs"
          + " against the agent at $" + ConsulServers.ENV_VAR + " (" + url + "): unset it to run"
          + " this test");
    }
    server.restart();
  }

  /** A blocking query on the lease key sees it vanish and the store fires the hint. */
  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /**
   * Destroys the session that locks {@code name}'s key ({@code PUT /v1/session/destroy}), as an
   * operator or Consul's own invalidation would: every name the holder locked with that session
   * is lost with it (Behavior release unlocks them all).
   */
  @Override
  protected boolean endSharedFate(String name) {
    com.fasterxml.jackson.databind.JsonNode entry = RawHttp.get(url, "/v1/kv/" + layout.keyOf(name));
    if (entry == null || !entry.get(0).hasNonNull("Session")) {
      throw new AssertionError("'" + name + "' is not locked by any session: " + entry);
    }
    String session = entry.get(0).get("Session").asText();
    RawHttp.put(url, "/v1/session/destroy/" + session, "");
    return true;
  }

  /** An operator's {@code consul kv delete} of the lease key, locked or not. */
  @Override
  protected void deleteOutOfBand(String name) {
    admin.keyValueClient().deleteKey(layout.keyOf(name));
  }
}
