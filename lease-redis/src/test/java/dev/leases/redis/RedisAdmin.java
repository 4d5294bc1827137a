package dev.leases.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Raw commands for tests: what an operator would type in redis-cli. */
final class RedisAdmin implements AutoCloseable {

  private final RedisClient client;
  private final StatefulRedisConnection<String, String> connection;

  private RedisAdmin(RedisClient client) {
    this.client = client;
    this.connection = client.connect();
    this.connection.setTimeout(Duration.ofSeconds(10));
  }

  static RedisAdmin connect(String uri) {
    return new RedisAdmin(RedisClient.create(uri));
  }

  RedisCommands<String, String> sync() {
    return connection.sync();
  }

  StatefulRedisConnection<String, String> connection() {
    return connection;
  }

  /** The server's clock in ms, from TIME. */
  long serverTimeMillis() {
    List<String> t = sync().time();
    return Long.parseLong(t.get(0)) * 1000 + Long.parseLong(t.get(1)) / 1000;
  }

  /** The EVALSHA and EVAL calls the server has run so far, from {@code INFO commandstats}. */
  long scriptCalls() {
    Map<String, Long> calls = commandCalls();
    return calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L);
  }

  /**
   * The calls of each command (lower case, e.g. {@code config|resetstat}) the server has run since
   * it started or last reset its statistics, those inside scripts included, from
   * {@code INFO commandstats}.
   */
  Map<String, Long> commandCalls() {
    Map<String, Long> calls = new HashMap<>();
    for (String line : sync().info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_")) {
        String v = line.substring(line.indexOf("calls=") + "calls=".length());
        calls.put(line.substring("cmdstat_".length(), line.indexOf(':')),
            Long.parseLong(v.substring(0, v.indexOf(','))));
      }
    }
    return calls;
  }

  @Override
  public void close() {
    connection.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
  }
}
