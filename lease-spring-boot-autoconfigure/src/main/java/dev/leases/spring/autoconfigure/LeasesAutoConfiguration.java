package dev.leases.spring.autoconfigure;

import dev.leases.LeaseStore;
import dev.leases.leader.LeaderLoop;
import dev.leases.once.RunLedger;
import dev.leases.spring.LeaderLoopCustomizer;
import dev.leases.spring.LeaderLoops;
import dev.leases.spring.LeaseStoreDecorator;
import dev.leases.spring.OnlyWhileLeader;
import dev.leases.spring.OnlyWhileLeaderInterceptor;
import dev.leases.spring.RunOnce;
import dev.leases.spring.RunOnceInterceptor;
import dev.leases.spring.RunRecorder;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Leases for a Spring Boot application: a {@link LeaseStore} from what the application has (see
 * {@link LeaseStoreConfigurations}), a {@link RunLedger}, the configured leader loops
 * ({@code leases.leaders.<name>.*}) as a lifecycle bean, and the {@link RunOnce} and
 * {@link OnlyWhileLeader} interceptors. Every bean backs off when the application defines its own
 * of the same type.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"})
@EnableConfigurationProperties(LeasesProperties.class)
@Import({LeaseStoreConfigurations.Postgres.class, LeaseStoreConfigurations.Redis.class,
    LeaseStoreConfigurations.Etcd.class, LeaseStoreConfigurations.Consul.class,
    LeaseStoreConfigurations.Exposed.class, LeaseStoreConfigurations.Missing.class, LeasesMetricsConfiguration.class,
    LeasesAutoConfiguration.AutoProxy.class})
public class LeasesAutoConfiguration {

  /** Created by Spring Boot's auto-configuration. */
  public LeasesAutoConfiguration() {}

  /**
   * Order of the {@link OnlyWhileLeader} advisor: outside {@link #RUN_ONCE_ORDER}, which is
   * outside {@code @Transactional} (whose advisor has the lowest precedence by default), so that a
   * {@code @Transactional} on a {@code @RunOnce} method joins the run's transaction.
   */
  public static final int ONLY_WHILE_LEADER_ORDER = Ordered.LOWEST_PRECEDENCE - 200;

  /** Order of the {@link RunOnce} advisor. */
  public static final int RUN_ONCE_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

  @Bean
  @ConditionalOnMissingBean
  LeaderLoops leaderLoops(LeasesProperties properties, ObjectProvider<LeaseStore> store,
      ObjectProvider<LeaderLoopCustomizer> customizers, ApplicationEventPublisher events) {
    Map<String, LeaderLoop.Builder> builders = new LinkedHashMap<>();
    if (!properties.getLeaders().isEmpty()) {
      LeaseStore s = store.getObject();
      properties.getLeaders().forEach((name, leader) -> {
        LeaderLoop.Builder b;
        try {
          b = LeaderLoop.builder(s, name);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("leases.leaders." + name + ": " + e.getMessage(), e);
        }
        b.ttl(leader.getTtl() != null ? leader.getTtl() : properties.getDefaultTtl());
        if (leader.getRenewInterval() != null) {
          b.renewInterval(leader.getRenewInterval());
        }
        if (leader.getStandDownMargin() != null) {
          b.standDownMargin(leader.getStandDownMargin());
        }
        if (properties.getCallTimeout() != null) {
          b.callTimeout(properties.getCallTimeout());
        }
        customizers.orderedStream().forEach(c -> c.customize(name, b));
        builders.put(name, b);
      });
    }
    LeaderLoops loops = new LeaderLoops(builders, events);
    loops.all().forEach((name, loop) -> customizers.orderedStream().forEach(c -> c.built(name, loop)));
    return loops;
  }

  @Bean
  @ConditionalOnMissingBean
  RunOnceInterceptor runOnceInterceptor(ObjectProvider<LeaseStore> store,
      ObjectProvider<RunLedger<?>> ledger, LeasesProperties properties,
      ConfigurableBeanFactory beanFactory, ObjectProvider<RunRecorder> recorder) {
    Duration ttl = properties.getOnce().getTtl() != null ? properties.getOnce().getTtl()
        : properties.getDefaultTtl();
    return new RunOnceInterceptor(store::getObject, () -> ledger.getIfAvailable(() -> {
      throw new IllegalStateException("@RunOnce needs a RunLedger bean: none is auto-configured"
          + " for " + store.getObject() + " (the PostgreSQL backend uses the DataSource, Redis"
          + ", etcd and Consul keep records beside their leases); define one");
    }), ttl, beanFactory, recorder.getIfAvailable(), Clock.systemUTC());
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static DefaultPointcutAdvisor leasesRunOnceAdvisor(ObjectProvider<RunOnceInterceptor> interceptor) {
    return advisor(RunOnce.class, new LazyInterceptor(interceptor::getObject), RUN_ONCE_ORDER);
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static DefaultPointcutAdvisor leasesOnlyWhileLeaderAdvisor(ObjectProvider<LeaderLoops> loops) {
    return advisor(OnlyWhileLeader.class, new OnlyWhileLeaderInterceptor(loops::getObject),
        ONLY_WHILE_LEADER_ORDER);
  }

  private static DefaultPointcutAdvisor advisor(Class<? extends java.lang.annotation.Annotation>
      annotation, org.aopalliance.aop.Advice advice, int order) {
    DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
        AnnotationMatchingPointcut.forMethodAnnotation(annotation), advice);
    advisor.setOrder(order);
    return advisor;
  }

  /**
   * Resolves the interceptor on first call: advisors are created early (before most beans exist),
   * the interceptor's store and ledger only when a method runs.
   */
  static final class LazyInterceptor implements org.aopalliance.intercept.MethodInterceptor {
    private final java.util.function.Supplier<RunOnceInterceptor> target;

    LazyInterceptor(java.util.function.Supplier<RunOnceInterceptor> target) {
      this.target = target;
    }

    @Override
    public @Nullable Object invoke(org.aopalliance.intercept.MethodInvocation invocation)
        throws Throwable {
      return target.get().invoke(invocation);
    }
  }

  /**
   * Makes sure an auto-proxy creator applies the infrastructure advisors above (Spring Boot's own
   * AOP auto-configuration registers the same one, with class proxying by default).
   */
  static final class AutoProxy implements ImportBeanDefinitionRegistrar {
    @Override
    public void registerBeanDefinitions(AnnotationMetadata metadata,
        BeanDefinitionRegistry registry) {
      AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
      AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
    }
  }

  /** Applies every {@link LeaseStoreDecorator} to an auto-configured store. */
  static LeaseStore decorate(LeaseStore store, ObjectProvider<LeaseStoreDecorator> decorators) {
    LeaseStore s = store;
    for (LeaseStoreDecorator d : (Iterable<LeaseStoreDecorator>) decorators.orderedStream()::iterator) {
      s = d.decorate(s);
    }
    return s;
  }
}
