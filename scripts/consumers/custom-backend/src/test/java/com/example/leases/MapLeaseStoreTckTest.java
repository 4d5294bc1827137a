package com.example.leases;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.remote.LeaseStoreServer;
import dev.leases.tck.remote.RemoteLeaseStore;
import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole compatibility kit on a store written outside the leases build. Every client, in this
 * JVM and in the kit's child JVMs, reaches the store through a loopback server, as clients of a
 * networked store would.
 */
class MapLeaseStoreTckTest extends LeaseStoreTck {

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(2);
  private static MapLeaseStore backing;
  private static LeaseStoreServer server;

  @BeforeAll
  static void serve() throws IOException {
    backing = new MapLeaseStore();
    server = LeaseStoreServer.serve(backing);
  }

  @AfterAll
  static void stop() {
    server.close();
    backing.close();
  }

  @Override
  protected LeaseStore newStore() {
    return new RemoteLeaseStore(server.port(), CALL_TIMEOUT);
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RemoteLeaseStoreFactory.class,
        Map.of("port", Integer.toString(server.port())));
  }

  @Override
  protected void deleteOutOfBand(String name) {
    backing.deleteOutOfBand(name);
  }

  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /** The records live in this JVM, as a durable store's live on its disk: a restart keeps them. */
  @Override
  protected void restartStore() throws IOException {
    server.close();
    server = LeaseStoreServer.serve(backing);
  }

  @Override
  protected int storePort() {
    return server.port();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return new RemoteLeaseStore(port, callTimeout);
  }
}
