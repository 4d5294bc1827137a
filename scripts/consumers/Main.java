package example;

import dev.leases.LeaseStore;
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.redis.RedisLeaseStore;
import io.netty.util.Version;
import java.util.Map;
import java.util.TreeMap;

/**
 * A user's program with lease-redis and lease-etcd on one class path. It opens no connection: it
 * initialises both stores' classes and prints the Netty version of every Netty jar it runs with.
 */
public final class Main {
  public static void main(String[] args) throws Exception {
    System.out.println("LeaseStore.MAX_BATCH_SIZE " + LeaseStore.MAX_BATCH_SIZE);
    System.out.println("RedisLeaseStore.TTL_RANGE " + RedisLeaseStore.TTL_RANGE);
    System.out.println("EtcdLeaseStore.TTL_RANGE " + EtcdLeaseStore.TTL_RANGE);
    // Netty 4.2's event loop group, which jetcd's Vert.x 5 needs: missing on a Netty 4.1 transport.
    Class.forName("io.netty.channel.MultiThreadIoEventLoopGroup");
    Map<String, String> versions = new TreeMap<>();
    Version.identify().forEach((artifact, v) -> versions.put(artifact, v.artifactVersion()));
    versions.forEach((artifact, v) -> System.out.println("runtime " + artifact + " " + v));
  }
}
