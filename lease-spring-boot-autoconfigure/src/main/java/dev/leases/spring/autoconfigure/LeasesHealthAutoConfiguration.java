package dev.leases.spring.autoconfigure;

import dev.leases.LeaseStore;
import dev.leases.spring.LeaderLoops;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * A {@code leases} health indicator (Spring Boot 4's {@code spring-boot-health}): see
 * {@link LeasesHealthIndicator}. Disable it with {@code management.health.leases.enabled=false}.
 */
@AutoConfiguration(after = LeasesAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(LeaseStore.class)
@org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
    name = "management.health.leases.enabled", matchIfMissing = true)
public class LeasesHealthAutoConfiguration {

  /** Created by Spring Boot's auto-configuration. */
  public LeasesHealthAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(name = "leasesHealthIndicator")
  LeasesHealthIndicator leasesHealthIndicator(ObjectProvider<LeaseStore> store,
      ObjectProvider<LeaderLoops> loops) {
    return new LeasesHealthIndicator(store::getObject, loops::getIfAvailable);
  }
}
