package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.tck.process.StoreRecipe;
import io.etcd.jetcd.Client;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole compatibility kit as an etcd user that has only {@link EtcdRoles.Access#HOLDER} on the
 * kit's prefix, against {@link SecureEtcd#withAuth()} (auth tokens expire after 2 s of idleness, so
 * the kit's waits also cross token expiries). Child JVMs get the password from a 0600 file
 * ({@code passwordFile}). Out-of-band deletes and revocations use the root user.
 */
class EtcdRbacKitTest extends EtcdKit {

  private static SecureEtcd etcd;
  private static String prefix;
  private static String user;
  private static String password;
  private static Path passwordFile;

  @BeforeAll
  static void holder() throws Exception {
    etcd = SecureEtcd.withAuth();
    prefix = SecureEtcd.random("rbac-kit-");
    user = SecureEtcd.random("kit-holder-");
    password = SecureEtcd.random("kit-pw-");
    passwordFile = SecureEtcd.secretFile(password + "\n");
    EtcdRoles.apply(etcd.admin(), prefix, user + "-role", EtcdRoles.Access.HOLDER,
        Duration.ofSeconds(10));
    etcd.addUser(user, password, user + "-role");
  }

  @Override
  protected Client admin() throws Exception {
    return etcd.admin();
  }

  @Override
  protected String prefix() {
    return prefix;
  }

  @Override
  protected LeaseStore newStore() {
    return EtcdLeaseStore.builder(etcd.endpoint).user(user, password).keyPrefix(prefix).build();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(EtcdLeaseStoreFactory.class, Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint,
        EtcdLeaseStoreFactory.KEY_PREFIX, prefix,
        EtcdLeaseStoreFactory.USER, user,
        EtcdLeaseStoreFactory.PASSWORD_FILE, passwordFile.toString()));
  }

  @Override
  protected int storePort() {
    return etcd.port();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return EtcdLeaseStore.builder("http://127.0.0.1:" + port).user(user, password)
        .keyPrefix(prefix).callTimeout(callTimeout).build();
  }

  @Override
  protected void restartStore() throws Exception {
    etcd.restart();
  }

}
