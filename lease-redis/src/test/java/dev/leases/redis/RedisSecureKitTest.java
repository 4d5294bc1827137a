package dev.leases.redis;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole compatibility kit as an ACL user that has only {@link RedisAcl.Access#HOLDER} on the
 * kit's prefix, over mutual TLS, against {@link SecureRedis} (one class for both, to keep the
 * suite short). Child JVMs get the password from a 0600 file ({@code passwordFile}) and the
 * certificates as {@code trustCertFile}, {@code clientCertFile}, {@code clientKeyFile}. The kit's
 * TCP proxy forwards the TLS bytes unchanged. Out-of-band deletes use the default user.
 */
class RedisSecureKitTest extends LeaseStoreTck {

  private static SecureRedis redis;
  private static String prefix;
  private static String user;
  private static String password;
  private static Path passwordFile;
  private static KeyLayout layout;

  @BeforeAll
  static void holder() throws Exception {
    redis = SecureRedis.shared();
    prefix = SecureRedis.random("kit-");
    user = SecureRedis.random("kit-holder-");
    password = SecureRedis.random("kit-pw-");
    passwordFile = SecureRedis.secretFile(password + "\n");
    redis.addUser(user, password, prefix, RedisAcl.Access.HOLDER);
    layout = new KeyLayout(prefix);
  }

  private static RedisLeaseStore.Builder builder(String uri) {
    return redis.builder(uri).user(user, passwordFile).keyPrefix(prefix);
  }

  /** As {@link RedisLeaseStoreTckTest}: a 10 s bound for the kit's 10,000-name batch. */
  @Override
  protected LeaseStore newStore() {
    return builder(redis.uri()).commandTimeout(Duration.ofSeconds(10)).build();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RedisLeaseStoreFactory.class, Map.of(
        RedisLeaseStoreFactory.URI, redis.uri(),
        RedisLeaseStoreFactory.KEY_PREFIX, prefix,
        RedisLeaseStoreFactory.USER, user,
        RedisLeaseStoreFactory.PASSWORD_FILE, passwordFile.toString(),
        RedisLeaseStoreFactory.TRUST_CERT_FILE, redis.certs.ca().toString(),
        RedisLeaseStoreFactory.CLIENT_CERT_FILE, redis.certs.clientCert().toString(),
        RedisLeaseStoreFactory.CLIENT_KEY_FILE, redis.certs.clientKey().toString()));
  }

  @Override
  protected int storePort() {
    return redis.port();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return builder(SecureRedis.uri(port)).commandTimeout(callTimeout).build();
  }

  /** A crash of the non-persistent server: data gone, ACL users kept (ACL file). */
  @Override
  protected void restartStore() throws Exception {
    redis.restart();
  }

  /** An operator's {@code DEL} of the lease and of its last-tenure record; the counter stays. */
  @Override
  protected void deleteOutOfBand(String name) {
    List<String> keys = layout.leaseKeys(name);
    redis.admin().sync().del(keys.get(0), keys.get(2));
  }
}
