package dev.leases.spring.autoconfigure;

import dev.leases.LeaseStore;
import dev.leases.spring.LeaderLoops;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * UP while the lease store answers a read ({@link LeaseStore#inspect} of a probe name, bounded by
 * the store's call timeout), DOWN with the error when it does not. Details: the store, and per
 * configured leader loop whether this process leads it and under which token. Leading or not does
 * not change the status: a follower is healthy.
 */
public final class LeasesHealthIndicator implements HealthIndicator {

  /** The lease name the probe inspects; nothing is written under it. */
  public static final String PROBE = "leases-health-probe";

  private final Supplier<LeaseStore> store;
  private final Supplier<@Nullable LeaderLoops> loops;

  /** Reports the store and the loops the suppliers give, read on each check. */
  public LeasesHealthIndicator(Supplier<LeaseStore> store,
      Supplier<@Nullable LeaderLoops> loops) {
    this.store = store;
    this.loops = loops;
  }

  @Override
  public Health health() {
    LeaseStore s = store.get();
    Health.Builder b;
    try {
      s.inspect(PROBE);
      b = Health.up();
    } catch (RuntimeException e) {
      b = Health.down(e);
    }
    b.withDetail("store", s.toString());
    LeaderLoops l = loops.get();
    if (l != null && !l.all().isEmpty()) {
      Map<String, Object> leaders = new LinkedHashMap<>();
      l.all().forEach((name, loop) -> {
        long token = loop.currentToken();
        leaders.put(name, token != 0 ? Map.of("leader", true, "token", token)
            : Map.of("leader", false));
      });
      b.withDetail("leaders", leaders);
    }
    return b.build();
  }
}
