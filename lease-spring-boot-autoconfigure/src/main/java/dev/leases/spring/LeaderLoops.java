package dev.leases.spring;

import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;

/**
 * The application's configured leader loops, started with the context and closed on shutdown
 * (closing releases a lease this process holds, so another instance takes over at once). Each
 * loop publishes {@link LeaderEvent}s from its listener thread.
 *
 * <p>Lifecycle: it runs in the last phase ({@link SmartLifecycle#DEFAULT_PHASE}), so loops start
 * after everything else has started and stop first on shutdown. A loop closed here does not start
 * again; a restarted context builds new loops.
 */
public final class LeaderLoops implements SmartLifecycle {

  private final Map<String, LeaderLoop> loops;
  private volatile boolean running;

  /**
   * @param builders the configured loops' builders by lease name; this adds the event listener
   *     and builds them (so every configuration error surfaces when the context starts)
   */
  public LeaderLoops(Map<String, LeaderLoop.Builder> builders, ApplicationEventPublisher events) {
    Objects.requireNonNull(events, "events");
    Map<String, LeaderLoop> built = new LinkedHashMap<>();
    builders.forEach((name, builder) -> {
      builder.listener(new Publisher(name, events));
      try {
        built.put(name, builder.build());
      } catch (IllegalArgumentException e) {
        built.values().forEach(LeaderLoop::close);
        throw new IllegalArgumentException("leases.leaders." + name + ": " + e.getMessage(), e);
      }
    });
    this.loops = Collections.unmodifiableMap(built);
  }

  /**
   * The loop of {@code lease}.
   *
   * @throws IllegalArgumentException if no loop is configured for it
   */
  public LeaderLoop get(String lease) {
    LeaderLoop loop = loops.get(lease);
    if (loop == null) {
      throw new IllegalArgumentException("no leader loop for lease '" + lease + "': configure it"
          + " as leases.leaders." + lease + ".ttl=... (configured: " + loops.keySet() + ")");
    }
    return loop;
  }

  /** Every configured loop, by lease name. */
  public Map<String, LeaderLoop> all() {
    return loops;
  }

  @Override
  public void start() {
    loops.values().forEach(LeaderLoop::start);
    running = true;
  }

  @Override
  public void stop() {
    running = false;
    loops.values().forEach(LeaderLoop::close);
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  private final class Publisher implements LeaderListener {
    private final String name;
    private final ApplicationEventPublisher events;

    Publisher(String name, ApplicationEventPublisher events) {
      this.name = name;
      this.events = events;
    }

    @Override
    public void acquired(String lease, long token) {
      events.publishEvent(new LeaderEvent.Acquired(LeaderLoops.this, name, token));
    }

    @Override
    public void lost(String lease, long token, LossReason reason) {
      events.publishEvent(new LeaderEvent.Lost(LeaderLoops.this, name, token, reason));
    }
  }
}
