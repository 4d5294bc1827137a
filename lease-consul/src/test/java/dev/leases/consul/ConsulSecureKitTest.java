package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.kiwiproject.consul.model.kv.Value;

/**
 * The whole compatibility kit as a least-privilege holder over mutual TLS, in one run: against
 * {@link SecureConsul} (HTTPS only, {@code verify_incoming}, ACLs with {@code default_policy =
 * "deny"}), every store and child JVM sends a token whose only policy is
 * {@link ConsulPolicies#rules ConsulPolicies.rules(prefix, HOLDER)}, read from a 0600 file
 * ({@code aclTokenFile}), and presents the test's client certificate. The kit's TCP proxy forwards
 * the TLS bytes unchanged. Out-of-band deletes and session destruction use the management token.
 */
class ConsulSecureKitTest extends LeaseStoreTck {

  private static SecureConsul consul;
  private static String prefix;
  private static Path tokenFile;

  @BeforeAll
  static void holder() throws Exception {
    consul = SecureConsul.shared();
    prefix = SecureConsul.random("secure-kit-");
    tokenFile = SecureConsul.secretFile(consul.token(prefix, ConsulPolicies.Access.HOLDER) + "\n");
  }

  private static Map<String, String> settings() {
    return consul.settings(Map.of(ConsulLeaseStoreFactory.KEY_PREFIX, prefix,
        ConsulLeaseStoreFactory.ACL_TOKEN_FILE, tokenFile.toString()));
  }

  @Override
  protected LeaseStore newStore() {
    return new ConsulLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(ConsulLeaseStoreFactory.class, settings());
  }

  /** As {@link ConsulLeaseStoreTckTest#expirySlack()}: Consul may wait 2 x TTL. */
  @Override
  protected Duration expirySlack() {
    return testTtl();
  }

  @Override
  protected int storePort() {
    return consul.server.httpPort();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return consul.builder("https://127.0.0.1:" + port).keyPrefix(prefix).aclTokenFile(tokenFile)
        .callTimeout(callTimeout).build();
  }

  /** SIGTERM and start again on the same ports and data; ACLs and tokens survive in Raft. */
  @Override
  protected void restartStore() throws Exception {
    consul.server.restart();
  }

  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  /** Destroys the session that locks {@code name}'s key, with the management token. */
  @Override
  protected boolean endSharedFate(String name) {
    String key = new KeyLayout(prefix).keyOf(name);
    Optional<String> session = consul.admin().keyValueClient().getValue(key)
        .flatMap(Value::getSession);
    consul.admin().sessionClient().destroySession(session.orElseThrow(
        () -> new AssertionError("'" + name + "' is not locked by any session")));
    return true;
  }

  @Override
  protected void deleteOutOfBand(String name) {
    consul.admin().keyValueClient().deleteKey(new KeyLayout(prefix).keyOf(name));
  }
}
