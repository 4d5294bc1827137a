package dev.leases.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.redis.RedisRunLedger;
import dev.leases.redis.RedisServers;
import dev.leases.spring.LeaseContext;
import dev.leases.spring.RunOnce;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Two Redis-backed contexts (the store from Spring Data Redis's connection settings, the
 * auto-configured RedisRunLedger) fire the same every-second {@code @RunOnce} job: each run's work
 * happens once.
 */
class RedisRunOnceContextTest {

  static final Map<String, AtomicInteger> WORK = new ConcurrentHashMap<>();
  static final Map<String, Integer> FIRED = new ConcurrentHashMap<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration(excludeName = // no database here: this app's leases live in Redis
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
  @EnableScheduling
  static class App {
    @Bean
    Job job() {
      return new Job();
    }
  }

  public static class Job {
    @Scheduled(cron = "* * * * * *")
    @RunOnce(job = "${test.job}", ttl = "5s")
    public void tick() {
      String run = LeaseContext.currentRun().orElseThrow().run();
      WORK.computeIfAbsent(run, r -> new AtomicInteger()).incrementAndGet();
    }
  }

  private static ConfigurableApplicationContext start(String job) {
    return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE).properties(
        "spring.main.banner-mode=off",
        "spring.data.redis.url=" + RedisServers.sharedUri(),
        "leases.redis.key-prefix=t" + job,
        "test.job=" + job).run();
  }

  @Test
  void twoContextsOnRedisCompleteEachRunOnce() {
    String job = "tick-" + UUID.randomUUID().toString().substring(0, 8);
    try (ConfigurableApplicationContext a = start(job);
        ConfigurableApplicationContext b = start(job)) {
      assertThat(a.getBean(LeaseStore.class).toString()).contains("Redis");
      assertThat(a.getBean(RunLedger.class)).isInstanceOf(RedisRunLedger.class);
      await().atMost(Duration.ofSeconds(60)).until(() -> WORK.size() >= 6);
      RunLedger<?> ledger = a.getBean(RunLedger.class);
      List<String> runs = List.copyOf(WORK.keySet());
      System.out.println("Redis two-context result: " + WORK);
      assertThat(WORK.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
      assertThat(runs).allSatisfy(r -> assertThat(ledger.completion(job, r)).isPresent());
    }
  }
}
