package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.remote.LeaseStoreServer;
import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The reference {@link InMemoryLeaseStore}: the harness uses it in-process; worker JVMs reach the
 * same leases through a {@link LeaseStoreServer} on loopback, release hints included.
 */
final class MemoryBackend implements Backend {

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();
  private final LeaseStoreServer server;

  MemoryBackend() throws IOException {
    server = LeaseStoreServer.serve(store);
  }

  @Override
  public String name() {
    return "memory";
  }

  @Override
  public String description() {
    return "InMemoryLeaseStore in the harness JVM; workers reach it over loopback"
        + " (LeaseStoreServer, release hints on a second connection)";
  }

  @Override
  public LeaseStore openStore() {
    return store.newClient();
  }

  @Override
  public StoreRecipe recipe() {
    return new StoreRecipe(RemoteLeaseStoreFactory.class,
        Map.of("port", Integer.toString(server.port())));
  }

  @Override
  public Compared compared() throws Exception {
    return Compared.of(openStore(), MemoryBackend::plainWrite);
  }

  private static PlainWrite plainWrite() {
    ConcurrentHashMap<String, Long> map = new ConcurrentHashMap<>();
    return new PlainWrite() {
      @Override
      public String what() {
        return "ConcurrentHashMap.put (in-process)";
      }

      @Override
      public void write(String key, long value) {
        map.put(key, value);
      }
    };
  }

  @Override
  public void close() {
    server.close();
    store.close();
  }
}
