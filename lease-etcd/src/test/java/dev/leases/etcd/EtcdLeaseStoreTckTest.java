package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The etcd store passes the whole compatibility kit against a real etcd. Expiry slack: etcd revokes
 * expired leases in a loop that runs every 500 ms, then commits the revocation through Raft, so a
 * lease may refuse contenders for up to about half a second after its TTL; one second leaves room
 * for a busy machine.
 */
class EtcdLeaseStoreTckTest extends LeaseStoreTck {

  private static String prefix;
  private static Client admin;

  @BeforeAll
  static void connect() {
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "tck-" + HexFormat.of().formatHex(b);
    admin = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }

  @Override
  protected LeaseStore newStore() {
    return EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(prefix).build();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(EtcdLeaseStoreFactory.class,
        Map.of(EtcdLeaseStoreFactory.ENDPOINTS, EtcdServers.endpoints(),
            EtcdLeaseStoreFactory.KEY_PREFIX, prefix));
  }

  @Override
  protected int storePort() {
    return java.net.URI.create(EtcdServers.endpointList().get(0)).getPort();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return EtcdLeaseStore.builder("http://127.0.0.1:" + port).keyPrefix(prefix)
        .callTimeout(callTimeout).build();
  }

  /** Deletes everything the store keeps for the name: the lease key and the companion key. */
  @Override
  protected void deleteOutOfBand(String name) throws Exception {
    KeyLayout keys = new KeyLayout(prefix);
    admin.getKVClient().delete(keys.leaseKey(name)).get(10, TimeUnit.SECONDS);
    admin.getKVClient().delete(keys.lastKey(name)).get(10, TimeUnit.SECONDS);
  }

  /**
   * Revokes, through a separate client, the etcd lease attached to {@code name}'s key: the holder's
   * shared etcd lease, and with it every name on it.
   */
  @Override
  protected boolean endSharedFate(String name) throws Exception {
    KeyValue kv = admin.getKVClient().get(new KeyLayout(prefix).leaseKey(name))
        .get(10, TimeUnit.SECONDS).getKvs().get(0);
    admin.getLeaseClient().revoke(kv.getLease()).get(10, TimeUnit.SECONDS);
    return true;
  }

  /** A watch on the lease key sees the {@code DELETE} and the store fires the hint. */
  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /**
   * A crash of the shared member, which comes back from its data directory: revisions (the tokens)
   * continue where they were. The kit's admin client and other classes' clients reconnect.
   */
  @Override
  protected void restartStore() throws Exception {
    EtcdServers.restartShared();
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(1);
  }
}
