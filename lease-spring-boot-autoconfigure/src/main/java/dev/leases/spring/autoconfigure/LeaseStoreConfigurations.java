package dev.leases.spring.autoconfigure;

import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.spring.FenceWriteRecorder;
import dev.leases.spring.LeaseStoreDecorator;
import dev.leases.spring.SpringJdbcFence;
import dev.leases.spring.SpringRunLedger;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Where the auto-configured {@link LeaseStore} comes from, tried in this order (the first that
 * applies wins; {@code leases.backend} restricts it to one): PostgreSQL on the application's single
 * DataSource; Redis on a Lettuce {@code RedisClient} bean with {@code leases.redis.uri}, on Spring
 * Data Redis's {@code LettuceConnectionFactory}, or on {@code leases.redis.uri} alone; etcd on
 * {@code leases.etcd.endpoints}; Consul on {@code leases.consul.url}. Each needs its module
 * ({@code lease-postgres}, ...) on the class path. None applies: starting fails with a message
 * that lists them.
 */
final class LeaseStoreConfigurations {

  private static final Logger log = LoggerFactory.getLogger(LeaseStoreConfigurations.class);
  private static final String BACKEND = "leases.backend";

  private LeaseStoreConfigurations() {}

  /** The store as the backend built it, before any {@link LeaseStoreDecorator}. */
  record Backend(String name, LeaseStore store) implements AutoCloseable {
    @Override
    public void close() {
      store.close();
    }
  }

  static LeaseStore exposed(Backend backend, ObjectProvider<LeaseStoreDecorator> decorators) {
    log.info("leases: using {} ({})", backend.name(), backend.store());
    LeaseStore s = LeasesAutoConfiguration.decorate(backend.store(), decorators);
    return new dev.leases.spi.ForwardingLeaseStore(s) {
      @Override
      public void close() {
        // the Backend bean closes the store
      }

      @Override
      public String toString() {
        return s.toString();
      }
    };
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({dev.leases.postgres.PostgresLeaseStore.class, DataSource.class,
      DataSourceTransactionManager.class})
  @ConditionalOnSingleCandidate(DataSource.class)
  @ConditionalOnProperty(name = BACKEND, havingValue = "postgres", matchIfMissing = true)
  static class Postgres {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
    Backend leasesBackend(DataSource dataSource, LeasesProperties p) {
      var b = dev.leases.postgres.PostgresLeaseStore.builder(dataSource)
          .table(p.getPostgres().getTable()).createTable(p.getPostgres().isCreateTables());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      return new Backend("postgres", b.build());
    }


    @Bean
    @ConditionalOnMissingBean(RunLedger.class)
    RunLedger<Connection> runLedger(DataSource dataSource, LeasesProperties p,
        ObjectProvider<PlatformTransactionManager> transactionManager) {
      PlatformTransactionManager tm = transactionManager.getIfUnique(
          () -> new DataSourceTransactionManager(dataSource));
      return new SpringRunLedger(dataSource, tm, b -> {
        b.table(p.getPostgres().getRunTable()).fenceTable(p.getPostgres().getFenceTable())
            .createTable(p.getPostgres().isCreateTables());
        if (p.getCallTimeout() != null) {
          b.callTimeout(p.getCallTimeout());
        }
        return b;
      });
    }

    @Bean
    @ConditionalOnMissingBean
    SpringJdbcFence springJdbcFence(DataSource dataSource, LeasesProperties p,
        ObjectProvider<FenceWriteRecorder> recorder) {
      var b = dev.leases.postgres.JdbcFence.builder(dataSource)
          .table(p.getPostgres().getFenceTable()).createTable(p.getPostgres().isCreateTables());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      return new SpringJdbcFence(b.build(), dataSource, recorder.getIfAvailable());
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({dev.leases.redis.RedisLeaseStore.class, RedisClient.class})
  @ConditionalOnProperty(name = BACKEND, havingValue = "redis", matchIfMissing = true)
  @Import({Redis.OnClient.class, Redis.OnConnectionFactory.class, Redis.OnUri.class})
  static class Redis {

    static Backend backend(dev.leases.redis.RedisLeaseStore.Builder b, LeasesProperties p) {
      b.keyPrefix(p.getRedis().getKeyPrefix());
      if (p.getCallTimeout() != null) {
        b.commandTimeout(p.getCallTimeout());
      }
      return new Backend("redis", b.build());
    }


    @Bean
    @ConditionalOnMissingBean(RunLedger.class)
    @ConditionalOnBean(Backend.class)
    RunLedger<Void> runLedger(Backend backend) {
      return dev.leases.redis.RedisRunLedger.on((dev.leases.redis.RedisLeaseStore) backend.store());
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnSingleCandidate(RedisClient.class)
    @ConditionalOnProperty("leases.redis.uri")
    static class OnClient {
      @Bean(destroyMethod = "close")
      @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
      Backend leasesBackend(RedisClient client, LeasesProperties p) {
        return backend(dev.leases.redis.RedisLeaseStore.builder(client, uri(p.getRedis().getUri())),
            p);
      }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(LettuceConnectionFactory.class)
    @ConditionalOnSingleCandidate(LettuceConnectionFactory.class)
    static class OnConnectionFactory {
      @Bean(destroyMethod = "close")
      @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
      Backend leasesBackend(LettuceConnectionFactory factory, LeasesProperties p) {
        RedisURI uri = p.getRedis().getUri() != null ? uri(p.getRedis().getUri())
            : uriOf(factory);
        return backend(dev.leases.redis.RedisLeaseStore.builder(uri), p);
      }

      private static RedisURI uriOf(LettuceConnectionFactory factory) {
        if (factory.getClusterConfiguration() != null
            || factory.getSentinelConfiguration() != null) {
          throw new IllegalStateException("the LettuceConnectionFactory is configured for a"
              + " Redis Cluster or Sentinel: set leases.redis.uri to the primary the leases use");
        }
        RedisStandaloneConfiguration c = factory.getStandaloneConfiguration();
        RedisURI.Builder b = RedisURI.builder().withHost(c.getHostName()).withPort(c.getPort())
            .withDatabase(c.getDatabase()).withSsl(factory.isUseSsl());
        if (c.getPassword().isPresent()) {
          char[] password = c.getPassword().get();
          if (c.getUsername() != null) {
            b.withAuthentication(c.getUsername(), new String(password));
          } else {
            b.withPassword(password);
          }
        }
        return b.withTimeout(Duration.ofSeconds(2)).build();
      }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty("leases.redis.uri")
    static class OnUri {
      @Bean(destroyMethod = "close")
      @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
      Backend leasesBackend(LeasesProperties p) {
        return backend(dev.leases.redis.RedisLeaseStore.builder(uri(p.getRedis().getUri())), p);
      }
    }

    static RedisURI uri(String text) {
      try {
        return RedisURI.create(text);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("leases.redis.uri '" + text + "' is not a Redis URI"
            + " (redis://host:port[/db] or rediss://...): " + e.getMessage(), e);
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.leases.etcd.EtcdLeaseStore")
  @ConditionalOnProperty(name = BACKEND, havingValue = "etcd", matchIfMissing = true)
  @Conditional(Etcd.EndpointsSet.class)
  static class Etcd {

    /** {@code leases.etcd.endpoints} is set, as a comma-separated value or indexed entries. */
    static final class EndpointsSet implements Condition {
      @Override
      public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        return Binder.get(context.getEnvironment())
            .bind("leases.etcd.endpoints", Bindable.listOf(String.class))
            .map(l -> !l.isEmpty()).orElse(false);
      }
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
    Backend leasesBackend(LeasesProperties p) {
      var b = dev.leases.etcd.EtcdLeaseStore.builder(
          p.getEtcd().getEndpoints().toArray(String[]::new)).keyPrefix(p.getEtcd().getKeyPrefix());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      return new Backend("etcd", b.build());
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(RunLedger.class)
    @ConditionalOnBean(Backend.class)
    dev.leases.etcd.EtcdRunLedger runLedger(LeasesProperties p) {
      var b = dev.leases.etcd.EtcdRunLedger.builder(
          p.getEtcd().getEndpoints().toArray(String[]::new)).keyPrefix(p.getEtcd().getKeyPrefix());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      return b.build();
    }

  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.leases.consul.ConsulLeaseStore")
  @ConditionalOnProperty(name = BACKEND, havingValue = "consul", matchIfMissing = true)
  @ConditionalOnProperty("leases.consul.url")
  static class Consul {
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({LeaseStore.class, Backend.class})
    Backend leasesBackend(LeasesProperties p) {
      var b = dev.leases.consul.ConsulLeaseStore.builder(p.getConsul().getUrl())
          .keyPrefix(p.getConsul().getKeyPrefix());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      if (p.getConsul().getAclToken() != null) {
        b.aclToken(p.getConsul().getAclToken());
      }
      return new Backend("consul", b.build());
    }


    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(RunLedger.class)
    dev.leases.consul.ConsulRunLedger runLedger(LeasesProperties p) {
      var b = dev.leases.consul.ConsulRunLedger.builder(p.getConsul().getUrl())
          .keyPrefix(p.getConsul().getKeyPrefix());
      if (p.getCallTimeout() != null) {
        b.callTimeout(p.getCallTimeout());
      }
      if (p.getConsul().getAclToken() != null) {
        b.aclToken(p.getConsul().getAclToken());
      }
      return b.build();
    }
  }

  /** The store of whichever backend applied, with every {@link LeaseStoreDecorator}. */
  @Configuration(proxyBeanMethods = false)
  static class Exposed {
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(Backend.class)
    LeaseStore leaseStore(Backend backend, ObjectProvider<LeaseStoreDecorator> decorators) {
      return exposed(backend, decorators);
    }
  }

  /** No backend applied: a store is asked for, so say what would make one. */
  @Configuration(proxyBeanMethods = false)
  static class Missing {
    @Bean
    @ConditionalOnMissingBean
    LeaseStore leaseStore(LeasesProperties p) {
      String chosen = p.getBackend() == null ? ""
          : " with leases.backend=" + p.getBackend().name().toLowerCase(java.util.Locale.ROOT);
      throw new IllegalStateException("no LeaseStore could be auto-configured" + chosen + ": add"
          + " lease-postgres and a single DataSource, lease-redis and a LettuceConnectionFactory"
          + " (or a RedisClient bean with leases.redis.uri, or leases.redis.uri alone),"
          + " lease-etcd and leases.etcd.endpoints, or lease-consul and leases.consul.url; or"
          + " define a LeaseStore bean");
    }
  }
}
