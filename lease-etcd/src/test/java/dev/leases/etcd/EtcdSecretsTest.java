package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.tck.servers.FreePorts;
import dev.leases.testing.LogCapture;
import dev.leases.testing.TestSecrets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Passwords come from a file or the environment and never show: auth failures (a wrong password)
 * and unreachable endpoints with a distinctive password leave it in no log line and in no message
 * anywhere in the exception's cause chain (suppressed exceptions included), against
 * {@link SecureEtcd#withAuth()}.
 */
class EtcdSecretsTest {

  private static final String SECRET = SecureEtcd.random("Sekr3t-") + "-pw";
  private static SecureEtcd etcd;
  private static String user;
  private static String password;
  private static Path rightFile;
  private static Path wrongFile;

  @BeforeAll
  static void users() throws Exception {
    etcd = SecureEtcd.withAuth();
    user = SecureEtcd.random("secret-user-");
    password = SecureEtcd.random("right-");
    etcd.addUser(user, password);
    rightFile = SecureEtcd.secretFile(password + "\n");
    wrongFile = SecureEtcd.secretFile(SECRET + "\n");
  }

  private static Map<String, String> settings(String endpoints, String key, String value) {
    return Map.of(EtcdLeaseStoreFactory.ENDPOINTS, endpoints, EtcdLeaseStoreFactory.USER, user,
        key, value, EtcdLeaseStoreFactory.CALL_TIMEOUT_MS, "2000");
  }

  @Test
  void thePasswordCanComeFromAFileOrTheEnvironment() {
    EtcdLeaseStoreFactory withEnv = new EtcdLeaseStoreFactory(
        name -> name.equals("LEASES_TEST_ETCD_PASSWORD") ? password : null);
    for (LeaseStore store : List.of(
        new EtcdLeaseStoreFactory().open(settings(etcd.endpoint,
            EtcdLeaseStoreFactory.PASSWORD_FILE, rightFile.toString())),
        withEnv.open(settings(etcd.endpoint, EtcdLeaseStoreFactory.PASSWORD_ENV,
            "LEASES_TEST_ETCD_PASSWORD")))) {
      try (store) {
        // the user has no role: etcd accepted the password and refused the write
        assertThatThrownBy(() -> store.acquireOrRenew("secret", HolderId.generate(),
            Duration.ofSeconds(5))).isInstanceOf(EtcdAccessDeniedException.class)
            .hasMessageContaining("lacks permission");
      }
    }
    assertThatThrownBy(() -> withEnv.open(settings(etcd.endpoint,
        EtcdLeaseStoreFactory.PASSWORD_ENV, "LEASES_UNSET_VARIABLE")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LEASES_UNSET_VARIABLE");
    assertThatThrownBy(() -> new EtcdLeaseStoreFactory().open(Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint, EtcdLeaseStoreFactory.USER, user)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("passwordFile");
    assertThatThrownBy(() -> new EtcdLeaseStoreFactory().open(Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint, EtcdLeaseStoreFactory.USER, user,
        EtcdLeaseStoreFactory.PASSWORD_FILE, rightFile.toString(),
        EtcdLeaseStoreFactory.PASSWORD_ENV, "X"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("one way");
    assertThatThrownBy(() -> new EtcdLeaseStoreFactory().open(Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint, EtcdLeaseStoreFactory.USER, user,
        "password", password))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown");
  }

  @Test
  void aWrongPasswordAndUnreachableEndpointsNeverShowThePassword() throws Exception {
    String closed = "http://127.0.0.1:" + FreePorts.pick();
    EtcdLeaseStoreFactory withEnv = new EtcdLeaseStoreFactory(
        name -> name.equals("LEASES_TEST_ETCD_SECRET") ? SECRET : null);
    List<Supplier<LeaseStore>> stores = List.of(
        () -> EtcdLeaseStore.builder(etcd.endpoint).user(user, SECRET)
            .callTimeout(Duration.ofSeconds(2)).build(),
        () -> new EtcdLeaseStoreFactory().open(settings(etcd.endpoint,
            EtcdLeaseStoreFactory.PASSWORD_FILE, wrongFile.toString())),
        () -> withEnv.open(settings(etcd.endpoint, EtcdLeaseStoreFactory.PASSWORD_ENV,
            "LEASES_TEST_ETCD_SECRET")),
        () -> EtcdLeaseStore.builder(closed).user(user, SECRET)
            .callTimeout(Duration.ofSeconds(2)).build(),
        () -> EtcdLeaseStore.builder("http://127.0.0.2:9").user(user, SECRET)
            .callTimeout(Duration.ofSeconds(1)).build());
    List<Throwable> thrown = Collections.synchronizedList(new ArrayList<>());
    String logs = LogCapture.during(() -> {
      for (Supplier<LeaseStore> s : stores) {
        try (LeaseStore store = s.get()) {
          assertThat(store.toString()).doesNotContain(SECRET);
          for (Runnable call : List.<Runnable>of(
              () -> store.acquireOrRenew("s", HolderId.generate(), Duration.ofSeconds(5)),
              () -> store.inspect("s"), () -> store.release("s", HolderId.generate()))) {
            try {
              call.run();
              throw new AssertionError("a call with a wrong password or no server succeeded");
            } catch (RuntimeException e) {
              thrown.add(e);
            }
          }
          store.onRelease("s", () -> {}).close();
        }
      }
      for (String endpoint : List.of("http://" + user + ":" + SECRET + "@127.0.0.1:2379",
          "http://" + user + ":" + SECRET + " @127.0.0.1:2379")) {
        try {
          EtcdLeaseStore.builder(endpoint);
          throw new AssertionError("an endpoint with credentials was accepted");
        } catch (IllegalArgumentException e) {
          thrown.add(e);
        }
      }
    });
    assertThat(thrown).hasSizeGreaterThanOrEqualTo(17);
    assertThat(thrown).anySatisfy(e -> assertThat(e).isInstanceOf(EtcdAccessDeniedException.class)
        .hasMessageContaining("rejected the credentials"));
    for (Throwable t : thrown) {
      assertThat(TestSecrets.chain(t)).as("exception chain of %s", t).doesNotContain(SECRET);
    }
    assertThat(logs).doesNotContain(SECRET);
  }
}
