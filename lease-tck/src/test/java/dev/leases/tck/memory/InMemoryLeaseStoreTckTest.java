package dev.leases.tck.memory;

import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
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
 * The reference in-memory store passes the kit. Child JVMs reach it through a loopback
 * {@link LeaseStoreServer}; clients in this JVM are {@link InMemoryLeaseStore#newClient()} handles.
 */
class InMemoryLeaseStoreTckTest extends LeaseStoreTck {

  private static InMemoryLeaseStore backing;
  private static LeaseStoreServer server;

  @BeforeAll
  static void serve() throws IOException {
    backing = new InMemoryLeaseStore();
    server = LeaseStoreServer.serve(backing);
  }

  @AfterAll
  static void stop() {
    server.close();
    backing.close();
  }

  @Override
  protected LeaseStore newStore() {
    return backing.newClient();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RemoteLeaseStoreFactory.class, Map.of("port", Integer.toString(server.port())));
  }

  /** {@link InMemoryLeaseStore#deleteOutOfBand} wakes subscribers, as an etcd watch would. */
  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /**
   * The reference store's state lives in this JVM, as a durable store's lives in its data
   * directory: a restart of its loopback server (child JVMs reconnect to the new port) keeps it.
   */
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

  @Override
  protected void deleteOutOfBand(String name) {
    backing.deleteOutOfBand(name);
  }
}
