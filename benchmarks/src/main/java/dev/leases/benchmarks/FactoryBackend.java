package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A backend given only by its {@link LeaseStoreFactory} class and settings — how etcd, Consul and a
 * user's own store join the benchmark. Its plain write, if any, is supplied separately (etcd: a
 * jetcd KV put; Consul: its HTTP key-value API).
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
  public PlainWrite plainWrite() {
    return plainWrite == null ? null : plainWrite.get();
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

  /** Consul's KV API: {@code PUT /v1/kv/<key>}. */
  static PlainWrite consulPut(String url, String prefix) {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    return http(http, "KV PUT (HTTP PUT /v1/kv/<key>)", (key, value) ->
        HttpRequest.newBuilder(URI.create(url.replaceAll("/+$", "") + "/v1/kv/" + prefix + key))
            .PUT(HttpRequest.BodyPublishers.ofString(Long.toString(value))));
  }

  private interface RequestFor {
    HttpRequest.Builder build(String key, long value);
  }

  private static PlainWrite http(HttpClient http, String what, RequestFor request) {
    return new PlainWrite() {
      @Override
      public String what() {
        return what;
      }

      @Override
      public void write(String key, long value) throws Exception {
        HttpResponse<String> r = http.send(request.build(key, value)
            .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
          throw new IllegalStateException(what + " answered " + r.statusCode() + ": " + r.body());
        }
      }
    };
  }
}
