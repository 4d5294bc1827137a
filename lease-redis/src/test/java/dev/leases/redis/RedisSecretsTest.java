package dev.leases.redis;

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
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Passwords come from a file or the environment and never show: wrong passwords (inline, file,
 * variable, URI), unreachable servers and malformed URIs with a distinctive password leave it (or
 * its length, as Lettuce's masked URI shows it) in no log line, no {@code toString} and no message
 * anywhere in the exception's cause chain (suppressed exceptions included), against
 * {@link SecureRedis}.
 */
class RedisSecretsTest {

  private static final String SECRET = SecureRedis.random("Sekr3t-") + "-pw";
  /** Lettuce masks a URI's password with as many asterisks: that tells its length. */
  private static final String MASKED = "*".repeat(SECRET.length());
  private static SecureRedis redis;
  private static String prefix;
  private static String user;
  private static String password;
  private static Path rightFile;
  private static Path wrongFile;

  @BeforeAll
  static void users() throws Exception {
    redis = SecureRedis.shared();
    prefix = SecureRedis.random("secrets-");
    user = SecureRedis.random("secret-user-");
    password = SecureRedis.random("right-");
    redis.addUser(user, password, prefix, RedisAcl.Access.OBSERVER);
    rightFile = SecureRedis.secretFile(password + "\n");
    wrongFile = SecureRedis.secretFile(SECRET + "\r\n");
  }

  private static Map<String, String> settings(String uri, String key, String value) {
    return Map.of(RedisLeaseStoreFactory.URI, uri, RedisLeaseStoreFactory.USER, user,
        RedisLeaseStoreFactory.KEY_PREFIX, prefix, key, value,
        RedisLeaseStoreFactory.COMMAND_TIMEOUT_MS, "2000",
        RedisLeaseStoreFactory.TRUST_CERT_FILE, redis.certs.ca().toString(),
        RedisLeaseStoreFactory.CLIENT_CERT_FILE, redis.certs.clientCert().toString(),
        RedisLeaseStoreFactory.CLIENT_KEY_FILE, redis.certs.clientKey().toString());
  }

  @Test
  void thePasswordCanComeFromAFileReadForEachConnectionOrTheEnvironment() throws Exception {
    RedisLeaseStoreFactory withEnv = new RedisLeaseStoreFactory(
        name -> name.equals("LEASES_TEST_REDIS_PASSWORD") ? password : null);
    Path rotating = SecureRedis.secretFile(password);
    for (LeaseStore store : List.of(
        new RedisLeaseStoreFactory().open(settings(redis.uri(),
            RedisLeaseStoreFactory.PASSWORD_FILE, rightFile.toString())),
        withEnv.open(settings(redis.uri(), RedisLeaseStoreFactory.PASSWORD_ENV,
            "LEASES_TEST_REDIS_PASSWORD")),
        new RedisLeaseStoreFactory().open(settings(redis.uri(),
            RedisLeaseStoreFactory.PASSWORD_FILE, rotating.toString())))) {
      try (store) {
        // an observer: Redis accepted the password and refused the write
        assertThat(store.inspect("secret")).isNotNull();
        assertThatThrownBy(() -> store.acquireOrRenew("secret", HolderId.generate(),
            Duration.ofSeconds(5))).isInstanceOf(RedisAccessDeniedException.class)
            .hasMessageContaining("may not run");
      }
    }
    // a rotated password is read again for the next connection
    String rotated = SecureRedis.random("rotated-");
    java.nio.file.Files.writeString(rotating, rotated);
    redis.setPassword(user, rotated);
    try (LeaseStore store = new RedisLeaseStoreFactory().open(settings(redis.uri(),
        RedisLeaseStoreFactory.PASSWORD_FILE, rotating.toString()))) {
      assertThat(store.inspect("secret")).isNotNull();
    } finally {
      redis.setPassword(user, password);
    }

    assertThatThrownBy(() -> withEnv.open(settings(redis.uri(),
        RedisLeaseStoreFactory.PASSWORD_ENV, "LEASES_UNSET_VARIABLE")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LEASES_UNSET_VARIABLE");
    Path missing = rightFile.resolveSibling("no-such-password-file");
    assertThatThrownBy(() -> new RedisLeaseStoreFactory().open(settings(redis.uri(),
        RedisLeaseStoreFactory.PASSWORD_FILE, missing.toString())))
        .as("a missing file is refused naming the setting and the file")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("setting '" + RedisLeaseStoreFactory.PASSWORD_FILE + "'")
        .hasMessageContaining(missing.toString());
    assertThatThrownBy(() -> new RedisLeaseStoreFactory().open(Map.of(
        RedisLeaseStoreFactory.URI, redis.uri(), RedisLeaseStoreFactory.USER, user)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("passwordFile");
    assertThatThrownBy(() -> new RedisLeaseStoreFactory().open(Map.of(
        RedisLeaseStoreFactory.URI, redis.uri(), RedisLeaseStoreFactory.USER, user,
        RedisLeaseStoreFactory.PASSWORD_FILE, rightFile.toString(),
        RedisLeaseStoreFactory.PASSWORD_ENV, "X"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("one way");
    assertThatThrownBy(() -> new RedisLeaseStoreFactory().open(Map.of(
        RedisLeaseStoreFactory.URI, "rediss://" + user + ":" + SECRET + "@127.0.0.1:6379",
        RedisLeaseStoreFactory.PASSWORD_FILE, rightFile.toString())))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one way")
        .hasMessageNotContaining(SECRET);
    assertThatThrownBy(() -> new RedisLeaseStoreFactory().open(Map.of(
        RedisLeaseStoreFactory.URI, redis.uri(), RedisLeaseStoreFactory.USER, user,
        "password", password))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown");
  }

  @Test
  void wrongPasswordsUnreachableServersAndMalformedUrisNeverShowThePassword() throws Exception {
    String closed = "rediss://127.0.0.1:" + FreePorts.pick();
    RedisLeaseStoreFactory withEnv = new RedisLeaseStoreFactory(
        name -> name.equals("LEASES_TEST_REDIS_SECRET") ? SECRET : null);
    String uriWithSecret = "rediss://" + user + ":" + SECRET + "@127.0.0.1:" + redis.port();
    List<Supplier<LeaseStore>> stores = List.of(
        () -> redis.builder(redis.uri()).user(user, SECRET)
            .commandTimeout(Duration.ofSeconds(2)).build(),
        () -> new RedisLeaseStoreFactory().open(settings(redis.uri(),
            RedisLeaseStoreFactory.PASSWORD_FILE, wrongFile.toString())),
        () -> withEnv.open(settings(redis.uri(), RedisLeaseStoreFactory.PASSWORD_ENV,
            "LEASES_TEST_REDIS_SECRET")),
        () -> redis.builder(uriWithSecret).commandTimeout(Duration.ofSeconds(2)).build(),
        () -> redis.builder(closed).user(user, SECRET).commandTimeout(Duration.ofSeconds(2))
            .build(),
        () -> redis.builder("rediss://127.0.0.2:9").user(user, SECRET)
            .commandTimeout(Duration.ofSeconds(1)).build());
    List<Throwable> thrown = Collections.synchronizedList(new ArrayList<>());
    String logs = LogCapture.during(() -> {
      for (Supplier<LeaseStore> s : stores) {
        try (LeaseStore store = s.get()) {
          assertThat(store.toString()).doesNotContain(SECRET).doesNotContain(MASKED);
          store.onRelease("s", () -> {}).close();
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
        }
      }
      for (String uri : List.of("rediss://" + user + ":" + SECRET + " @127.0.0.1:6379",
          "rediss://:" + SECRET + "@[::1")) {
        try {
          RedisLeaseStore.builder(uri).build().close();
          throw new AssertionError("a malformed URI was accepted: " + uri);
        } catch (IllegalArgumentException e) {
          thrown.add(e);
        }
      }
    });
    assertThat(thrown).hasSizeGreaterThanOrEqualTo(18);
    assertThat(thrown).anySatisfy(e -> assertThat(e)
        .isInstanceOf(RedisAccessDeniedException.class)
        .hasMessageContaining("rejected the credentials"));
    for (Throwable t : thrown) {
      assertThat(Secrets.chain(t)).as("exception chain of %s", t).doesNotContain(SECRET)
          .doesNotContain(MASKED);
    }
    assertThat(logs).doesNotContain(SECRET);
  }
}
