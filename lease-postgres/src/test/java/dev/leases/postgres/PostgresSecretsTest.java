package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.leader.LeaderLoop;
import dev.leases.tck.servers.FreePorts;
import dev.leases.testing.LogCapture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Passwords come from a file or the environment, not only the URL, and never show: connection
 * failures (a wrong password, an unreachable server) with a distinctive password leave it in no
 * log line and in no exception message anywhere in the cause chain. Against {@link TlsPostgres},
 * which demands SCRAM passwords.
 */
class PostgresSecretsTest {

  private static final String SECRET = "Sekr3t-" + LeastPrivilegeSchema.random() + "-pw";
  private static LeastPrivilegeSchema db;
  private static Path wrongFile;
  private static Path rightFile;

  @BeforeAll
  static void roles() throws Exception {
    db = LeastPrivilegeSchema.create(TlsPostgres.shared().adminUrl());
    wrongFile = secretFile(SECRET + "\n");
    rightFile = secretFile(db.password + "\n");
  }

  @AfterAll
  static void drop() throws Exception {
    db.close();
    Files.deleteIfExists(wrongFile);
    Files.deleteIfExists(rightFile);
  }

  private static Path secretFile(String content) throws Exception {
    Path f = Files.createTempFile("leases-pg-secret-", "",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(f, content);
    return f;
  }

  private static Map<String, String> settings(String url, String key, String value) {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, url, key, value,
        PostgresLeaseStoreFactory.TABLE, db.leaseTable,
        PostgresLeaseStoreFactory.CALL_TIMEOUT_MILLIS, "1000");
  }

  @Test
  void thePasswordCanComeFromAFileOrTheEnvironment() {
    String url = db.userUrl(db.holder);
    PostgresLeaseStoreFactory withEnv = new PostgresLeaseStoreFactory(
        name -> name.equals("LEASES_TEST_PG_PASSWORD") ? db.password : null);
    for (PostgresLeaseStore store : List.of(
        new PostgresLeaseStoreFactory().open(settings(url, "passwordFile", rightFile.toString())),
        withEnv.open(settings(url, "passwordEnv", "LEASES_TEST_PG_PASSWORD")))) {
      try (store) {
        assertThat(store.acquireOrRenew("secret-" + LeastPrivilegeSchema.random(),
            HolderId.generate(), Duration.ofSeconds(5))).isPresent();
      }
    }
    assertThatThrownBy(() -> withEnv.open(settings(url, "passwordEnv", "LEASES_UNSET_VARIABLE")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LEASES_UNSET_VARIABLE");
    assertThatThrownBy(() -> new PostgresLeaseStoreFactory().open(
        settings(url + "&password=" + SECRET, "passwordFile", rightFile.toString())))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one way")
        .hasMessageNotContaining(SECRET);
  }

  @Test
  void aWrongPasswordOrAnUnreachableServerNeverShowsThePassword() throws Exception {
    String url = db.userUrl(db.holder);
    String unreachable = "jdbc:postgresql://127.0.0.1:" + FreePorts.pick()
        + "/postgres?user=" + db.holder;
    List<Map<String, String>> cases = List.of(
        settings(url, "passwordFile", wrongFile.toString()),
        settings(url, "password", SECRET),
        settings(url + "&password=" + SECRET, "username", db.holder),
        settings(unreachable, "passwordFile", wrongFile.toString()),
        settings(unreachable + "&password=" + SECRET, "username", db.holder));
    List<Throwable> thrown = new ArrayList<>();
    String log = LogCapture.during(() -> {
      for (Map<String, String> s : cases) {
        try (PostgresLeaseStore store = new PostgresLeaseStoreFactory().open(s)) {
          String name = "secret-" + LeastPrivilegeSchema.random();
          try {
            store.inspect(name);
          } catch (LeaseStoreUnavailableException e) {
            thrown.add(e);
          }
          // the LISTEN thread's and the leader loop's failure logs
          store.onRelease(name, () -> {});
          try (LeaderLoop loop = LeaderLoop.builder(store, name).ttl(Duration.ofSeconds(1))
              .start()) {
            long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (System.nanoTime() < end && !(LogCapture.snapshot().contains(name)
                && LogCapture.snapshot().contains("LISTEN connection"))) {
              Thread.sleep(20);
            }
          }
        } catch (InterruptedException e) {
          throw new AssertionError(e);
        }
      }
    });
    assertThat(thrown).as("every case failed to connect").hasSize(cases.size());
    assertThat(log).as("the failures were logged").contains("acquire attempt failed")
        .contains("LISTEN connection");
    assertThat(log).as("the log").doesNotContain(SECRET);
    for (Throwable t : thrown) {
      assertNoSecret(t);
    }
  }

  private static void assertNoSecret(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      assertThat(String.valueOf(c)).as("message of %s", c.getClass().getName())
          .doesNotContain(SECRET);
      for (Throwable s : c.getSuppressed()) {
        assertNoSecret(s);
      }
    }
  }
}
