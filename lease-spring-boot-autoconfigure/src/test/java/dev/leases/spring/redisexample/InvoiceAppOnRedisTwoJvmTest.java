package dev.leases.spring.redisexample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.once.RunKeys;
import dev.leases.once.RunRecord;
import dev.leases.redis.RedisLeaseStore;
import dev.leases.redis.RedisRunLedger;
import dev.leases.redis.RedisServers;
import dev.leases.spring.example.AppJvms;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@link InvoiceAppOnRedis} in two application JVMs on one Redis, both firing the same
 * every-second cron: each run completes once, in one JVM, and its work happened once.
 */
class InvoiceAppOnRedisTwoJvmTest {

  @Test
  void twoJvmsOnOneScheduleCompleteEachRunOnce() throws Exception {
    String s = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    String prefix = "inv-" + s;
    String key = "invoices-" + s;
    List<String> args = List.of(
        "--leases.backend=redis",
        "--spring.data.redis.url=" + RedisServers.sharedUri(),
        "--spring.data.redis.timeout=2s",
        "--spring.main.banner-mode=off",
        "--invoices.cron=* * * * * *",
        "--invoices.key=" + key,
        "--leases.once.ttl=5s",
        "--leases.redis.key-prefix=" + prefix);
    RedisClient client = RedisClient.create(RedisServers.sharedUri());
    try (RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri())
            .keyPrefix(prefix).build();
        StatefulRedisConnection<String, String> redis = client.connect();
        AppJvms jvms = AppJvms.start(InvoiceAppOnRedis.class, 2, args)) {
      redis.setTimeout(Duration.ofSeconds(10));
      RedisRunLedger ledger = RedisRunLedger.on(store);
      await().atMost(Duration.ofMinutes(2)).ignoreExceptions()
          .until(() -> completions(ledger).size() >= 8);
      Map<Long, Map<String, Double>> runsByPid = jvms.stop();
      List<RunRecord> completions = completions(ledger);
      List<String> completedRuns = completions.stream().map(RunRecord::run).distinct().toList();
      Map<String, String> work = redis.sync().hgetall(key);
      System.out.println("two-JVM Redis result: outcomes per JVM " + runsByPid + "; runs worked "
          + work.size() + ", completion records " + completions.size());
      assertThat(work.values()).as("work per run").allSatisfy(n -> assertThat(n).isEqualTo("1"));
      assertThat(completedRuns).hasSameSizeAs(completions)
          .containsExactlyInAnyOrderElementsOf(work.keySet());
      assertThat(completedRuns).allSatisfy(r -> assertThat(ledger.completion("invoices", r))
          .hasValueSatisfying(c -> assertThat(c.status()).isEqualTo(RunRecord.Status.COMPLETED)));
      AppJvms.assertEachRunCompletedOnce(runsByPid, completions.size());
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  private static List<RunRecord> completions(RedisRunLedger ledger) {
    return ledger.history("invoices", RunKeys.MAX_HISTORY).stream()
        .filter(r -> r.status() == RunRecord.Status.COMPLETED).toList();
  }
}
