package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.redis.RedisLeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.Map;

/**
 * Redis: {@code $LEASES_REDIS_URI} / {@code --redis-uri}, or with {@code --start-local} the installed
 * {@code redis-server} on a free loopback port, without persistence, in a throw-away directory.
 * Keys use the prefix {@value #PREFIX}; the plain write is {@code SET} on one Lettuce connection.
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

  @Override
  public PlainWrite plainWrite() {
    RedisClient client = RedisClient.create(uri);
    StatefulRedisConnection<String, String> connection = client.connect();
    RedisCommands<String, String> sync = connection.sync();
    return new PlainWrite() {
      @Override
      public String what() {
        return "SET key value (one connection, sync)";
      }

      @Override
      public void write(String key, long value) {
        sync.set(PREFIX + ":plain:" + key, Long.toString(value));
      }

      @Override
      public void close() {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
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
