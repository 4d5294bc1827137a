package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.FencedOutException;
import dev.leases.redis.RedisFence;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Runs the README's Redis and etcd programs against local servers, as a user would. */
class BackendExamplesTest {

  private static LocalProcessServer redis;
  private static LocalProcessServer etcd;

  @BeforeAll
  static void servers() throws Exception {
    redis = LocalServers.startRedis();
    etcd = LocalServers.startEtcd();
  }

  @AfterAll
  static void stop() {
    if (redis != null) {
      redis.close();
    }
    if (etcd != null) {
      etcd.close();
    }
  }

  @Test
  void theRedisLeaderWritesThroughTheFenceAndAnOlderTokenIsRefused() throws Exception {
    String uri = "redis://127.0.0.1:" + redis.port() + "/0";
    String out = ProgramOutput.of(() -> RedisFencedLeader.main(new String[] {uri}));
    Matcher m = Pattern.compile("leader with token ([1-9][0-9]*): wrote cache:warm-state")
        .matcher(out);
    assertThat(m.find()).as("the example's output: %s", out).isTrue();
    long token = Long.parseLong(m.group(1));
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      assertThat(c.sync().hgetall("cache:warm-state")).containsKeys("warmed-at", "by");
      RedisFence fence = RedisFence.of(c, Duration.ofSeconds(2));
      assertThat(fence.highestToken("cache:warm-state")).hasValue(token);
      assertThatThrownBy(() -> fence.hset("cache:warm-state", Map.of("by", "stale"), token - 1))
          .as("a write with an older token than the example's").isInstanceOf(
              FencedOutException.class);
      assertThat(c.sync().hget("cache:warm-state", "by")).isNotEqualTo("stale");
    } finally {
      client.shutdown();
    }
  }

  @Test
  void theEtcdFollowerTakesOverAfterTheLeadersReleaseWithALargerToken() throws Exception {
    String endpoints = "http://127.0.0.1:" + etcd.port();
    String out = ProgramOutput.of(() -> EtcdFailover.main(new String[] {endpoints}));
    Matcher m = Pattern.compile("a led with token ([1-9][0-9]*); b took over with token"
        + " ([1-9][0-9]*), [0-9]+ ms after a's release").matcher(out);
    assertThat(m.find()).as("the example's output: %s", out).isTrue();
    assertThat(Long.parseLong(m.group(2))).as("the successor's token")
        .isGreaterThan(Long.parseLong(m.group(1)));
  }
}
