package dev.leases.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.postgres.PostgresServers;
import dev.leases.spring.LeaderEvent;
import dev.leases.spring.LeaderLoops;
import dev.leases.tck.servers.TcpProxy;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * Leader loops as lifecycle beans in real Spring Boot contexts on PostgreSQL: health follows the
 * store, meters and events follow leadership, and closing a context hands the lease over at once.
 */
class LeadershipContextTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Events events() {
      return new Events();
    }
  }

  static class Events implements ApplicationListener<LeaderEvent> {
    final List<LeaderEvent> seen = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeaderEvent event) {
      seen.add(event);
    }
  }

  private static List<String> props(String url, String suffix, String ttl) {
    List<String> p = new java.util.ArrayList<>(PostgresContexts.tables(url, suffix));
    p.add("leases.leaders.main.ttl=" + ttl);
    p.add("leases.call-timeout=500ms");
    return p;
  }

  private static double gauge(ConfigurableApplicationContext ctx) {
    return ctx.getBean(MeterRegistry.class).get("leases.leader").tag("lease", "main").gauge()
        .value();
  }

  private static Status health(ConfigurableApplicationContext ctx) {
    return ctx.getBean("leasesHealthIndicator", HealthIndicator.class).health().getStatus();
  }

  @Test
  void healthFollowsTheStoreAndMetersAndEventsFollowLeadership() throws Exception {
    String suffix = PostgresContexts.fresh("hl");
    int port = URI.create(PostgresServers.url().substring("jdbc:".length())).getPort();
    try (TcpProxy proxy = new TcpProxy(port);
        ConfigurableApplicationContext a = PostgresContexts.start(App.class, props(
            PostgresServers.url().replace(":" + port + "/", ":" + proxy.port() + "/"), suffix,
            "3s"))) {
      await().atMost(Duration.ofSeconds(30)).until(() -> gauge(a) == 1.0);
      assertThat(health(a)).isEqualTo(Status.UP);
      assertThat(a.getBean(Events.class).seen).first().isInstanceOf(LeaderEvent.Acquired.class);
      try (ConfigurableApplicationContext b = PostgresContexts.start(App.class,
          props(PostgresServers.url(), suffix, "3s"))) {
        assertThat(gauge(b)).isZero();
        proxy.cut();
        await().atMost(Duration.ofSeconds(30)).until(() -> health(a) == Status.DOWN);
        await().atMost(Duration.ofSeconds(30)).until(() -> gauge(b) == 1.0);
        assertThat(gauge(a)).isZero();
        MeterRegistry ra = a.getBean(MeterRegistry.class);
        await().atMost(Duration.ofSeconds(30)).until(() -> ra.find("leases.losses")
            .tag("lease", "main").functionCounters().stream()
            .mapToDouble(c -> c.count()).sum() >= 1.0);
        assertThat(ra.find("leases.store.errors").counters()).isNotEmpty();
        assertThat(a.getBean(Events.class).seen).anySatisfy(e ->
            assertThat(e).isInstanceOf(LeaderEvent.Lost.class));
        assertThat(b.getBean(MeterRegistry.class).get("leases.acquisitions").tag("lease", "main")
            .functionCounter().count()).isEqualTo(1.0);

        proxy.forward();
        await().atMost(Duration.ofSeconds(30)).until(() -> health(a) == Status.UP);
        assertThat(gauge(a)).isZero(); // b keeps leading
        assertThat(gauge(b)).isEqualTo(1.0);
      }
    }
  }

  @Test
  void closingTheContextReleasesTheLeaseAndAnotherContextTakesOverAtOnce() {
    String suffix = PostgresContexts.fresh("ho");
    ConfigurableApplicationContext a = PostgresContexts.start(App.class,
        props(PostgresServers.url(), suffix, "15s"));
    try (ConfigurableApplicationContext b = PostgresContexts.start(App.class,
        props(PostgresServers.url(), suffix, "15s"))) {
      await().atMost(Duration.ofSeconds(30)).until(() -> a.getBean(LeaderLoops.class).get("main")
          .isLeader());
      assertThat(b.getBean(LeaderLoops.class).get("main").isLeader()).isFalse();
      a.close();
      long closed = System.nanoTime();
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
          .until(() -> b.getBean(LeaderLoops.class).get("main").isLeader());
      Duration handover = Duration.ofNanos(System.nanoTime() - closed);
      System.out.println("clean handover after context close: " + handover.toMillis() + " ms");
      // far below the 15 s TTL a crashed holder would leave: the release woke the follower
      assertThat(handover).isLessThan(Duration.ofSeconds(3));
    } finally {
      a.close();
    }
  }
}
