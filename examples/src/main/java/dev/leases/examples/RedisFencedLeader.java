package dev.leases.examples;

// README: redis-fence
import dev.leases.leader.LeaderLoop;
import dev.leases.redis.RedisFence;
import dev.leases.redis.RedisLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/** Lead "cache-warmer" on Redis and record the warm-up in a hash only the current leader can set. */
public final class RedisFencedLeader {

  public static void main(String[] args) throws Exception {
    String uri = args[0];                        // redis://cache:6379/0
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> connection = client.connect();
        RedisLeaseStore store = RedisLeaseStore.builder(uri).build();
        LeaderLoop leader = LeaderLoop.builder(store, "cache-warmer")
            .ttl(Duration.ofSeconds(15))       // renews every 5 s
            .start()) {
      RedisFence fence = RedisFence.of(connection, Duration.ofSeconds(2));
      long token = leader.awaitLeadership(Duration.ofMinutes(1));   // 0: someone else leads
      if (token == 0) {
        System.out.println("another process leads cache-warmer");
        return;
      }
      // One script checks the token against the highest the key has accepted and writes; a
      // superseded leader's write throws FencedOutException and changes nothing.
      fence.hset("cache:warm-state", Map.of("warmed-at", Instant.now().toString(),
          "by", leader.holder().value()), token);
      System.out.println("leader with token " + token + ": wrote cache:warm-state");
    } finally {
      client.shutdown();
    }
  }
}
// README: end
