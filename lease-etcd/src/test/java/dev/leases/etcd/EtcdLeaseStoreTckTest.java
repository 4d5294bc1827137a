package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.tck.process.StoreRecipe;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The etcd store passes the whole compatibility kit against a real etcd (expiry slack: see
 * {@link EtcdKit}).
 */
class EtcdLeaseStoreTckTest extends EtcdKit {

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
  protected Client admin() {
    return admin;
  }

  @Override
  protected String prefix() {
    return prefix;
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

  /**
   * A crash of the shared member, which comes back from its data directory: revisions (the tokens)
   * continue where they were. The kit's admin client and other classes' clients reconnect.
   */
  @Override
  protected void restartStore() throws Exception {
    EtcdServers.restartShared();
  }

}
