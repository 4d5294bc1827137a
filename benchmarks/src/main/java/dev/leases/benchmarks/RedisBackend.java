package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.redis.RedisLeaseStore;
import dev.leases.redis.RedisLeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Redis: {@code $LEASES_REDIS_URI} / {@code --redis-uri}, or with {@code --start-local} the installed
 * {@code redis-server} on a free loopback port, without persistence, in a throw-away directory.
 * Keys use the prefix {@value #PREFIX}; the plain write is {@code SET} on a connection of the
 * store's Lettuce client.
 */
final class RedisBackend implements Backend {

  static final String PREFIX = "leases-bench";

  private final LocalProcessServer local;
  private final String uri;
  private final String version;

  private RedisBackend(LocalProcessServer local, String uri) {
    this.local = local;
    this.uri = uri;
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      String info = c.sync().info("server");
      version = info.lines().filter(l -> l.startsWith("redis_version:"))
          .map(l -> l.substring("redis_version:".length()).trim()).findFirst().orElse("?");
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  static RedisBackend start(String externalUri) throws Exception {
    if (externalUri != null && !externalUri.isBlank()) {
      return new RedisBackend(null, externalUri);
    }
    LocalProcessServer server = LocalServers.startRedis();
    try {
      return new RedisBackend(server, server.endpoint());
    } catch (RuntimeException e) {
      server.close();
      throw e;
    }
  }

  /** The redis-server this backend started, or null for an external one. */
  LocalProcessServer local() {
    return local;
  }

  @Override
  public String name() {
    return "redis";
  }

  @Override
  public String description() {
    return "Redis " + version + ", " + (local != null
        ? "local redis-server started for this run (no persistence)" : "external server " + uri)
        + ", key prefix " + PREFIX;
  }

  @Override
  public Map<String, String> facts() {
    return Map.of("server_version", version, "origin", local != null ? "local" : "external");
  }

  @Override
  public LeaseStore openStore() {
    return new RedisLeaseStoreFactory().open(recipe().settings());
  }

  @Override
  public StoreRecipe recipe() {
    return new StoreRecipe(RedisLeaseStoreFactory.class,
        Map.of(RedisLeaseStoreFactory.URI, uri, RedisLeaseStoreFactory.KEY_PREFIX, PREFIX));
  }

  /**
   * The store on the harness's client, as {@link RedisLeaseStore#builder(RedisClient, RedisURI)}
   * builds it for a caller's client (with the options the store's own client has), and {@code SET}
   * on a second connection of that client. The client has one I/O thread, so that both
   * connections are read and written by the same thread, as both are answered by the server's one
   * (see {@link Backend#compared}).
   */
  @Override
  public Compared compared() throws Exception {
    ClientResources resources = ClientResources.builder().ioThreadPoolSize(1).build();
    RedisURI redisUri = RedisURI.create(uri);
    RedisClient client = RedisClient.create(resources, redisUri);
    Runnable shutdown = () -> {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    };
    try {
      client.setOptions(ClientOptions.builder()
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .timeoutOptions(TimeoutOptions.enabled(RedisLeaseStore.DEFAULT_COMMAND_TIMEOUT))
          .build());
      return Compared.of(RedisLeaseStore.builder(client, redisUri).keyPrefix(PREFIX).build(),
          () -> set(client, shutdown));
    } catch (Exception | Error e) {
      shutdown.run();
      throw e;
    }
  }

  private static PlainWrite set(RedisClient client, Runnable shutdown) {
    StatefulRedisConnection<String, String> connection = client.connect();
    RedisCommands<String, String> sync = connection.sync();
    return new PlainWrite() {
      @Override
      public String what() {
        return "SET key value (sync, a second connection of the store's client, one I/O thread)";
      }

      @Override
      public void write(String key, long value) {
        sync.set(PREFIX + ":plain:" + key, Long.toString(value));
      }

      @Override
      public void close() {
        connection.close();
        shutdown.run();
      }
    };
  }

  @Override
  public void close() {
    if (local != null) {
      local.close();
    }
  }
}
