package dev.leases.micrometer;

import dev.leases.LeaseArguments;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * Meters of one leader loop: {@value LeaseMeters#LEADER} (1/0), {@value LeaseMeters#ACQUISITIONS}
 * and {@value LeaseMeters#LOSSES} by {@code reason}, all tagged {@code lease}.
 *
 * <pre>{@code
 * LeaderMetrics metrics = new LeaderMetrics("billing");
 * LeaderLoop loop = LeaderLoop.builder(store, "billing").ttl(ttl).listener(metrics).build();
 * metrics.track(loop).bindTo(registry);
 * loop.start();
 * }</pre>
 *
 * <p>It is a {@link LeaderListener}, so it must be added to the loop's builder; events are counted
 * from then on, whether or not it is bound yet (the counters read local adders). The gauge reads
 * {@link LeaderLoop#isLeader()} of the {@linkplain #track tracked} loop when it is sampled, which
 * drops to 0 at the local deadline even before the loss event is delivered; without a tracked loop
 * it follows the events. Either way it is a sample of the past: a fenced resource, not this gauge,
 * decides whether a write is accepted.
 */
public final class LeaderMetrics implements LeaderListener, MeterBinder {

  private final String lease;
  private final LongAdder acquisitions = new LongAdder();
  private final Map<LossReason, LongAdder> losses = new EnumMap<>(LossReason.class);
  private volatile LeaderLoop loop;
  private volatile boolean leadingByEvents;

  /** Metrics for the lease {@code lease}; call {@link #track} or feed it as a listener. */
  public LeaderMetrics(String lease) {
    this.lease = LeaseArguments.requireName(lease);
    for (LossReason r : LossReason.values()) {
      losses.put(r, new LongAdder());
    }
  }

  /** Makes the gauge read {@code loop.isLeader()}; returns this. */
  public LeaderMetrics track(LeaderLoop loop) {
    Objects.requireNonNull(loop, "loop must not be null");
    if (!loop.name().equals(lease)) {
      throw new IllegalArgumentException("these metrics are for lease '" + lease
          + "', the loop leads '" + loop.name() + "'");
    }
    this.loop = loop;
    return this;
  }

  /** The lease these metrics are for. */
  public String lease() {
    return lease;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Gauge.builder(LeaseMeters.LEADER, this, LeaderMetrics::leading)
        .tag("lease", lease)
        .description("1 while this process leads the lease, else 0")
        .register(registry);
    FunctionCounter.builder(LeaseMeters.ACQUISITIONS, acquisitions, LongAdder::sum)
        .tag("lease", lease)
        .description("tenures this process began")
        .register(registry);
    for (Map.Entry<LossReason, LongAdder> e : losses.entrySet()) {
      FunctionCounter.builder(LeaseMeters.LOSSES, e.getValue(), LongAdder::sum)
          .tag("lease", lease)
          .tag("reason", e.getKey().name().toLowerCase(java.util.Locale.ROOT))
          .description("tenures this process ended, by reason")
          .register(registry);
    }
  }

  private double leading() {
    LeaderLoop l = loop;
    return (l != null ? l.isLeader() : leadingByEvents) ? 1 : 0;
  }

  @Override
  public void acquired(String name, long token) {
    leadingByEvents = true;
    acquisitions.increment();
  }

  @Override
  public void lost(String name, long token, LossReason reason) {
    leadingByEvents = false;
    losses.get(reason).increment();
  }
}
