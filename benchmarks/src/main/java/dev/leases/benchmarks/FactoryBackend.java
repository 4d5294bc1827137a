package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A backend given only by its {@link LeaseStoreFactory} class and settings — how etcd, Consul and a
 * user's own store join the benchmark. Its plain write, if any, is supplied separately (etcd: a
 * jetcd KV put; Consul: a consul-client KV put).
 */
final class FactoryBackend implements Backend {

  private final String name;
  private final String description;
  private final StoreRecipe recipe;
  private final Supplier<PlainWrite> plainWrite;
  private final AutoCloseable onClose;

  FactoryBackend(String name, String description, Class<? extends LeaseStoreFactory> factory,
      Map<String, String> settings, Supplier<PlainWrite> plainWrite, AutoCloseable onClose) {
    this.name = name;
    this.description = description;
    this.recipe = new StoreRecipe(factory, settings);
    this.plainWrite = plainWrite;
    this.onClose = onClose;
  }

  /** Loads a factory class by name; empty message-bearing exception if it is not on the class path. */
  @SuppressWarnings("unchecked")
  static Class<? extends LeaseStoreFactory> factoryClass(String className)
      throws ClassNotFoundException {
    Class<?> c = Class.forName(className);
    if (!LeaseStoreFactory.class.isAssignableFrom(c)) {
      throw new IllegalArgumentException(className + " does not implement "
          + LeaseStoreFactory.class.getName());
    }
    return (Class<? extends LeaseStoreFactory>) c;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public LeaseStore openStore() {
    return recipe.open();
  }

  @Override
  public StoreRecipe recipe() {
    return recipe;
  }

  @Override
  public Compared compared() throws Exception {
    return Compared.of(openStore(), () -> plainWrite == null ? null : plainWrite.get());
  }

  @Override
  public void close() {
    if (onClose != null) {
      try {
        onClose.close();
      } catch (Exception e) {
        // best effort
      }
    }
  }

  /** etcd's KV put through jetcd, the client library the etcd store itself uses. */
  static PlainWrite etcdPut(String endpoints, String prefix) {
    io.etcd.jetcd.Client client = io.etcd.jetcd.Client.builder()
        .endpoints(endpoints.split(",")).build();
    io.etcd.jetcd.KV kv = client.getKVClient();
    return new PlainWrite() {
      @Override
      public String what() {
        return "KV put (jetcd, the same gRPC client the store uses)";
      }

      @Override
      public void write(String key, long value) throws Exception {
        kv.put(io.etcd.jetcd.ByteSequence.from(prefix + key, StandardCharsets.UTF_8),
            io.etcd.jetcd.ByteSequence.from(Long.toString(value), StandardCharsets.UTF_8))
            .get(2, java.util.concurrent.TimeUnit.SECONDS);
      }

      @Override
      public void close() {
        client.close();
      }
    };
  }

  /** Consul's KV put through consul-client, the client library the Consul store itself uses. */
  static PlainWrite consulPut(String url, String prefix) {
    org.kiwiproject.consul.Consul consul = org.kiwiproject.consul.Consul.builder().withUrl(url)
        .withPing(false).build();
    org.kiwiproject.consul.KeyValueClient kv = consul.keyValueClient();
    return new PlainWrite() {
      @Override
      public String what() {
        return "KV put (consul-client, the same HTTP client the store uses)";
      }

      @Override
      public void write(String key, long value) {
        if (!kv.putValue(prefix + key, Long.toString(value))) {
          throw new IllegalStateException("Consul refused the KV put of " + prefix + key);
        }
      }

      @Override
      public void close() {
        consul.destroy();
      }
    };
  }
}
