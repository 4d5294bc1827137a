package dev.leases.spring.autoconfigure;

import dev.leases.leader.LeaderLoop;
import dev.leases.micrometer.FenceMetrics;
import dev.leases.micrometer.LeaderMetrics;
import dev.leases.micrometer.MeteredLeaseStore;
import dev.leases.micrometer.RunMetrics;
import dev.leases.spring.FenceWriteRecorder;
import dev.leases.spring.LeaderLoopCustomizer;
import dev.leases.spring.LeaseStoreDecorator;
import dev.leases.spring.RunRecorder;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code lease-micrometer} meters on the application's {@link MeterRegistry}, when both are
 * on the class path: the auto-configured store is wrapped in a {@link MeteredLeaseStore}, every
 * configured leader loop gets {@link LeaderMetrics} (bound through a {@link MeterBinder} bean, as
 * Spring Boot binds them), fenced writes of {@code SpringJdbcFence} and {@code @RunOnce} runs are
 * counted. Without a registry bean, nothing is metered.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass({MeterRegistry.class, LeaderMetrics.class})
class LeasesMetricsConfiguration {

  @Bean
  LeaseStoreDecorator leasesMeteredStore(ObjectProvider<MeterRegistry> registry) {
    return store -> {
      MeterRegistry r = registry.getIfAvailable();
      return r == null ? store : new MeteredLeaseStore(store, r);
    };
  }

  @Bean
  LeaderMeters leasesLeaderMeters() {
    return new LeaderMeters();
  }

  @Bean
  FenceWriteRecorder leasesFenceMeters(ObjectProvider<MeterRegistry> registry) {
    return new FenceWriteRecorder() {
      @Override
      public <T> T record(String resource, Supplier<T> write) {
        MeterRegistry r = registry.getIfAvailable();
        return r == null ? write.get() : new FenceMetrics(r).record(resource, write);
      }
    };
  }

  @Bean
  RunRecorder leasesRunMeters(ObjectProvider<MeterRegistry> registry) {
    return (job, run) -> {
      MeterRegistry r = registry.getIfAvailable();
      return r == null ? run.get() : new RunMetrics(r).record(job, run);
    };
  }

  /** Adds {@link LeaderMetrics} to every configured loop and binds them as a MeterBinder. */
  static final class LeaderMeters implements LeaderLoopCustomizer, MeterBinder {
    private final Map<String, LeaderMetrics> metrics = new ConcurrentHashMap<>();

    @Override
    public void customize(String lease, LeaderLoop.Builder builder) {
      builder.listener(metrics.computeIfAbsent(lease, LeaderMetrics::new));
    }

    @Override
    public void built(String lease, LeaderLoop loop) {
      metrics.get(lease).track(loop);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
      metrics.values().forEach(m -> m.bindTo(registry));
    }
  }
}
