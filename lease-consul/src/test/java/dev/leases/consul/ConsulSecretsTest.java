package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.tck.servers.FreePorts;
import dev.leases.testing.LogCapture;
import dev.leases.testing.Secrets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ACL tokens come from a file or the environment and never show: refused tokens, unknown tokens,
 * malformed ones and unreachable agents with a distinctive token leave it in no log line, in no
 * {@code toString()} and in no message anywhere in the exception's cause chain (suppressed
 * exceptions included), against {@link SecureConsul}.
 */
class ConsulSecretsTest {

  /** Unknown to Consul, so every call with it is refused. */
  private static final String SECRET = UUID.randomUUID().toString();
  private static SecureConsul consul;
  private static Path secretFile;

  @BeforeAll
  static void files() throws Exception {
    consul = SecureConsul.shared();
    secretFile = SecureConsul.secretFile(SECRET + "\n");
  }

  @Test
  void theFactoryTakesTheTokenFromAFileOrTheEnvironmentOnly() {
    String prefix = SecureConsul.random("secrets-");
    String token = consul.token(prefix, ConsulPolicies.Access.HOLDER);
    ConsulLeaseStoreFactory withEnv =
        new ConsulLeaseStoreFactory(n -> n.equals("LEASES_TEST_CONSUL_TOKEN") ? token : null);
    try (LeaseStore s = withEnv.open(consul.settings(Map.of(
        ConsulLeaseStoreFactory.KEY_PREFIX, prefix,
        ConsulLeaseStoreFactory.ACL_TOKEN_ENV, "LEASES_TEST_CONSUL_TOKEN")))) {
      assertThat(s.acquireOrRenew("s", HolderId.generate(), Duration.ofSeconds(5))).isPresent();
    }
    assertThatThrownBy(() -> withEnv.open(consul.settings(Map.of(
        ConsulLeaseStoreFactory.ACL_TOKEN_ENV, "LEASES_UNSET_VARIABLE"))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LEASES_UNSET_VARIABLE");
    assertThatThrownBy(() -> withEnv.open(consul.settings(Map.of(
        ConsulLeaseStoreFactory.ACL_TOKEN_ENV, "LEASES_TEST_CONSUL_TOKEN",
        ConsulLeaseStoreFactory.ACL_TOKEN_FILE, secretFile.toString()))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one way");
    assertThatThrownBy(() -> withEnv.open(consul.settings(Map.of("aclToken", token))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no inline 'aclToken' setting")
        .hasMessageNotContaining(token);
  }

  @Test
  void refusedMalformedAndUnsentTokensNeverShow() throws Exception {
    String closed = "https://127.0.0.1:" + FreePorts.pick();
    Path malformed = SecureConsul.secretFile(SECRET + " x\n");
    ConsulLeaseStoreFactory withEnv =
        new ConsulLeaseStoreFactory(n -> n.equals("LEASES_TEST_CONSUL_SECRET") ? SECRET : null);
    List<Supplier<LeaseStore>> stores = List.of(
        () -> consul.builder(consul.url()).aclToken(SECRET).build(),
        () -> new ConsulLeaseStoreFactory().open(consul.settings(Map.of(
            ConsulLeaseStoreFactory.ACL_TOKEN_FILE, secretFile.toString()))),
        () -> withEnv.open(consul.settings(Map.of(
            ConsulLeaseStoreFactory.ACL_TOKEN_ENV, "LEASES_TEST_CONSUL_SECRET"))),
        () -> consul.builder(closed).aclToken(SECRET).callTimeout(Duration.ofSeconds(2)).build(),
        () -> ConsulLeaseStore.builder(consul.url()).aclToken(SECRET)
            .tls(consul.certs.wrongCa(), null, null).build());
    List<Throwable> thrown = Collections.synchronizedList(new ArrayList<>());
    String logs = LogCapture.during(() -> {
      for (Supplier<LeaseStore> s : stores) {
        try (LeaseStore store = s.get()) {
          thrown.addAll(Secrets.failingCalls(store, SECRET));
        }
      }
      for (Runnable bad : List.<Runnable>of(
          () -> ConsulLeaseStore.builder(consul.url()).aclToken(SECRET + " x"),
          () -> ConsulLeaseStore.builder(consul.url()).aclTokenFile(malformed),
          () -> new ConsulLeaseStoreFactory().open(consul.settings(Map.of(
              ConsulLeaseStoreFactory.ACL_TOKEN_FILE, malformed.toString()))),
          () -> new ConsulLeaseStoreFactory().open(consul.settings(Map.of("aclToken", SECRET))),
          () -> ConsulLeaseStore.builder("https://u:" + SECRET + "@127.0.0.1:8501"),
          () -> ConsulLeaseStore.builder("https://u:" + SECRET + " @127.0.0.1:8501"),
          () -> ConsulLeaseStore.builder("https://127.0.0.1:8501/?token=" + SECRET),
          () -> new ConsulLeaseStoreFactory().open(Map.of(ConsulLeaseStoreFactory.URL,
              "https://127.0.0.1:8501?token=" + SECRET)))) {
        try {
          bad.run();
          throw new AssertionError("a malformed token or a URL with credentials was accepted");
        } catch (IllegalArgumentException e) {
          thrown.add(e);
        }
      }
    });
    assertThat(thrown).hasSizeGreaterThanOrEqualTo(23);
    assertThat(thrown).anySatisfy(e -> assertThat(e)
        .isInstanceOf(ConsulAccessDeniedException.class)
        .hasMessageContaining("does not know the ACL token"));
    for (Throwable t : thrown) {
      assertThat(Secrets.chain(t)).as("exception chain of %s", t).doesNotContain(SECRET);
    }
    assertThat(logs).doesNotContain(SECRET);
  }

}
