package dev.leases.examples;

// README: etcd-failover
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.leader.LeaderLoop;
import java.time.Duration;

/**
 * Two schedulers contend for "scheduler" on etcd; when the leader shuts down cleanly, the follower,
 * woken by its watch on the lease key, takes over at once instead of waiting out the TTL.
 */
public final class EtcdFailover {

  public static void main(String[] args) throws Exception {
    String[] endpoints = args[0].split(",");    // http://etcd-1:2379,http://etcd-2:2379,...
    Duration ttl = Duration.ofSeconds(10);
    try (EtcdLeaseStore storeA = EtcdLeaseStore.builder(endpoints).build();
        EtcdLeaseStore storeB = EtcdLeaseStore.builder(endpoints).build()) {
      LeaderLoop a = LeaderLoop.builder(storeA, "scheduler").ttl(ttl).start();
      long tokenA = a.awaitLeadership(Duration.ofMinutes(1));
      try (LeaderLoop b = LeaderLoop.builder(storeB, "scheduler").ttl(ttl).start()) {
        long released = System.nanoTime();
        a.close();                               // releases the lease: etcd deletes the key
        long tokenB = b.awaitLeadership(ttl.multipliedBy(2));
        System.out.printf("a led with token %d; b took over with token %d, %d ms after a's"
            + " release (TTL %d s)%n", tokenA, tokenB, (System.nanoTime() - released) / 1_000_000,
            ttl.toSeconds());
      }
    }
  }
}
// README: end
