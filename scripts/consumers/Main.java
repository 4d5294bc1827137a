package example;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.consul.ConsulLeaseStore;
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.postgres.PostgresLeaseStoreFactory;
import dev.leases.redis.RedisLeaseStore;
import io.netty.util.Version;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * A user's program with all four backends on one class path. It prints the Netty version of every
 * Netty jar it runs with, then, given {@code PG_JDBC_URL REDIS_URI ETCD_ENDPOINT CONSUL_URL},
 * acquires, renews and releases one lease on each backend, and exits 1 if any step misbehaves.
 */
public final class Main {
  /** Generous: a cold JVM's first calls on a loaded build machine. */
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  public static void main(String[] args) throws Exception {
    System.out.println("LeaseStore.MAX_BATCH_SIZE " + LeaseStore.MAX_BATCH_SIZE);
    // Netty 4.2's event loop group, which jetcd's Vert.x 5 needs: missing on a Netty 4.1 transport.
    Class.forName("io.netty.channel.MultiThreadIoEventLoopGroup");
    Map<String, String> versions = new TreeMap<>();
    Version.identify().forEach((artifact, v) -> versions.put(artifact, v.artifactVersion()));
    versions.forEach((artifact, v) -> System.out.println("runtime " + artifact + " " + v));
    if (args.length == 0) {
      return;
    }
    boolean ok = true;
    try (LeaseStore pg = new PostgresLeaseStoreFactory().open(Map.of("jdbcUrl", args[0],
        "callTimeoutMillis", "10000"))) {
      ok &= cycle("postgres", pg);
    }
    try (LeaseStore redis = RedisLeaseStore.builder(args[1]).commandTimeout(TIMEOUT).build()) {
      ok &= cycle("redis", redis);
    }
    try (LeaseStore etcd = EtcdLeaseStore.builder(args[2]).callTimeout(TIMEOUT).build()) {
      ok &= cycle("etcd", etcd);
    }
    try (LeaseStore consul = ConsulLeaseStore.builder(args[3]).callTimeout(TIMEOUT).build()) {
      ok &= cycle("consul", consul);
    }
    if (!ok) {
      System.exit(1);
    }
  }

  /** Acquire, renew (same token), release, and a re-acquire with a larger token. */
  private static boolean cycle(String backend, LeaseStore store) {
    String name = "consumer-" + UUID.randomUUID();
    HolderId holder = HolderId.generate();
    Duration ttl = store.ttlRange().roundUp(Duration.ofSeconds(15));
    LeaseGrant first = store.acquireOrRenew(name, holder, ttl).orElse(null);
    LeaseGrant renewed = store.acquireOrRenew(name, holder, ttl).orElse(null);
    boolean released = store.release(name, holder);
    LeaseGrant again = store.acquireOrRenew(name, holder, ttl).orElse(null);
    store.release(name, holder);
    boolean ok = first != null && renewed != null && renewed.token() == first.token() && released
        && again != null && again.token() > first.token();
    System.out.println((ok ? "cycle ok " : "cycle FAILED ") + backend + ": acquired "
        + (first == null ? "-" : first.token()) + ", renewed " + (renewed == null ? "-"
        : renewed.token()) + ", released " + released + ", re-acquired "
        + (again == null ? "-" : again.token()));
    return ok;
  }
}
