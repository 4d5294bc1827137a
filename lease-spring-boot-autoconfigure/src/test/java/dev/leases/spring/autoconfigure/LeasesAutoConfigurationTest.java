package dev.leases.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.once.InMemoryRunLedger;
import dev.leases.once.RunLedger;
import dev.leases.postgres.PostgresServers;
import dev.leases.spring.LeaderLoops;
import dev.leases.spring.RunOnce;
import dev.leases.spring.RunOnceInterceptor;
import dev.leases.spring.SpringJdbcFence;
import dev.leases.spring.SpringRunLedger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The conditional wiring: what is auto-configured from what, what backs off, what is refused. */
class LeasesAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(LeasesAutoConfiguration.class,
          LeasesHealthAutoConfiguration.class));

  private final ApplicationContextRunner withDataSource = runner
      .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
          DataSourceTransactionManagerAutoConfiguration.class))
      .withPropertyValues("spring.datasource.url=" + PostgresServers.url());

  @Configuration(proxyBeanMethods = false)
  static class OwnStore {
    @Bean
    LeaseStore myStore() {
      return new InMemoryLeaseStore();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnLedger {
    @Bean
    RunLedger<Void> myLedger() {
      return new InMemoryRunLedger();
    }
  }

  @Test
  void aDataSourceGivesPostgresStoreSpringLedgerAndFence() {
    withDataSource.run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(LeaseStore.class)
          .hasSingleBean(RunLedger.class).hasSingleBean(SpringJdbcFence.class)
          .hasSingleBean(LeasesHealthIndicator.class);
      assertThat(ctx.getBean(LeaseStore.class).toString()).startsWith("PostgresLeaseStore");
      assertThat(ctx.getBean(RunLedger.class)).isInstanceOf(SpringRunLedger.class);
    });
  }

  @Test
  void aUserStoreAndLedgerWin() {
    withDataSource.withUserConfiguration(OwnStore.class, OwnLedger.class).run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(LeaseStore.class).hasBean("myStore")
          .hasSingleBean(RunLedger.class).hasBean("myLedger")
          .doesNotHaveBean(LeaseStoreConfigurations.Backend.class);
      assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
    });
  }

  @Test
  void aUserStoreWithoutDataSourceNeedsNoBackend() {
    runner.withUserConfiguration(OwnStore.class)
        .withPropertyValues("leases.leaders.billing.ttl=3s").run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(LeaderLoops.class).get("billing").ttl())
              .isEqualTo(Duration.ofSeconds(3));
          assertThat(ctx).doesNotHaveBean(RunLedger.class);
        });
  }

  @Test
  void leasesBackendRestrictsTheChoice() {
    withDataSource.withPropertyValues("leases.backend=redis", "leases.leaders.x.ttl=3s")
        .run(ctx -> assertThat(ctx).hasFailed().getFailure()
            .rootCause().hasMessageContaining("no LeaseStore could be auto-configured with"
                + " leases.backend=redis"));
  }

  @Test
  void noBackendFailsWithAMessageThatSaysWhatToAdd() {
    runner.withPropertyValues("leases.leaders.x.ttl=3s").run(ctx ->
        assertThat(ctx).hasFailed().getFailure().rootCause()
            .hasMessageContaining("add lease-postgres and a single DataSource"));
  }

  @Test
  void badLeaderSettingsFailNamingTheProperty() {
    runner.withUserConfiguration(OwnStore.class)
        .withPropertyValues("leases.leaders.billing.ttl=3s",
            "leases.leaders.billing.renew-interval=2s")
        .run(ctx -> assertThat(ctx).hasFailed().getFailure()
            .hasStackTraceContaining("leases.leaders.billing: renewInterval PT2S leaves room"));
    runner.withUserConfiguration(OwnStore.class)
        .withPropertyValues("leases.leaders.billing.ttl=0s")
        .run(ctx -> assertThat(ctx).hasFailed().getFailure()
            .hasStackTraceContaining("leases.leaders.billing: "));
  }

  @Test
  void anUnknownBackendFailsBinding() {
    runner.withPropertyValues("leases.backend=mongodb").run(ctx ->
        assertThat(ctx).hasFailed().getFailure()
            .hasStackTraceContaining("leases.backend")
            .hasStackTraceContaining("mongodb"));
  }

  @Test
  void etcdEndpointsGiveAnEtcdStoreAndLedger() {
    runner.withPropertyValues("leases.etcd.endpoints=http://127.0.0.1:1").run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(LeaseStore.class)
          .hasSingleBean(RunLedger.class);
      assertThat(ctx.getBean(LeaseStore.class).toString()).contains("Etcd");
      assertThat(ctx.getBean(RunLedger.class)).isInstanceOf(dev.leases.etcd.EtcdRunLedger.class);
    });
  }

  @Test
  void propertiesBind() {
    withDataSource.withPropertyValues("leases.default-ttl=45s", "leases.call-timeout=750ms",
        "leases.postgres.table=my_leases", "leases.redis.key-prefix=app",
        "leases.etcd.endpoints=http://a:2379,http://b:2379").run(ctx -> {
          LeasesProperties p = ctx.getBean(LeasesProperties.class);
          assertThat(p.getDefaultTtl()).isEqualTo(Duration.ofSeconds(45));
          assertThat(p.getCallTimeout()).isEqualTo(Duration.ofMillis(750));
          assertThat(p.getPostgres().getTable()).isEqualTo("my_leases");
          assertThat(p.getRedis().getKeyPrefix()).isEqualTo("app");
          assertThat(p.getEtcd().getEndpoints()).containsExactly("http://a:2379",
              "http://b:2379");
          // postgres comes first even though etcd endpoints are set
          assertThat(ctx.getBean(LeaseStore.class).toString()).contains("my_leases");
        });
  }

  @Test
  void configurationMetadataIsPublishedForIdes() throws Exception {
    try (var in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json).contains("\"leases.backend\"", "\"leases.default-ttl\"",
          "\"leases.call-timeout\"", "\"leases.postgres.table\"", "\"leases.redis.key-prefix\"",
          "\"leases.leaders\"", "Which backend to use when several apply");
    }
  }

  public static class Misconfigured {
    @RunOnce(job = "no-key")
    public void noSchedule() {}
  }

  @Configuration(proxyBeanMethods = false)
  static class MisconfiguredJob {
    @Bean
    Misconfigured misconfigured() {
      return new Misconfigured();
    }
  }

  @Test
  void aRunOnceWithoutRunKeySourceIsRefusedNamingTheMethod() {
    runner.withUserConfiguration(OwnStore.class, OwnLedger.class, MisconfiguredJob.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(RunOnceInterceptor.class);
          assertThatThrownBy(() -> ctx.getBean(Misconfigured.class).noSchedule())
              .isInstanceOf(IllegalStateException.class)
              .hasMessageContaining("Misconfigured.noSchedule()")
              .hasMessageContaining("give @RunOnce(run = \"...\")");
        });
  }

  @Test
  void theDataSourceIsNeverClosedByUs() {
    withDataSource.run(ctx -> {
      DataSource ds = ctx.getBean(DataSource.class);
      ctx.getBean(LeaseStore.class).token("x");
      ctx.close();
      assertThat(((HikariDataSource) ds).isClosed()).isTrue(); // Boot closed it, once
    });
  }
}
