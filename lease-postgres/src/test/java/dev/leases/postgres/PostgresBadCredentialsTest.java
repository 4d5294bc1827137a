package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.leader.LeaderLoop;
import dev.leases.testing.LogCapture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * A loop whose database login fails says so at WARN within one TTL, with the server's reason, and
 * says so again when the login starts to work.
 */
class PostgresBadCredentialsTest {

  @Test
  void aLoginThatFailsIsOneClearWarningWithinOneTtlAndItsRecoveryIsLogged() throws Exception {
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    String role = "leases_missing_" + HexFormat.of().formatHex(b);
    String url = PostgresServers.url().replaceFirst("user=[^&]*", "user=" + role);
    Duration ttl = Duration.ofSeconds(2);
    long[] token = new long[1];
    String log;
    try (HikariDataSource pool = PostgresServers.pool(url, 2, c -> {
      c.setInitializationFailTimeout(-1);
      c.setConnectionTimeout(1_000);
    })) {
      PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build();
      log = LogCapture.during(() -> {
        try (LeaderLoop loop = LeaderLoop.builder(store, "bad-credentials-" + role).ttl(ttl)
            .start()) {
          long end = System.nanoTime() + ttl.toNanos();
          String seen = "";
          while (System.nanoTime() < end && !seen.contains("acquire attempt failed")) {
            Thread.sleep(20);
            seen = LogCapture.snapshot();
          }
          try (Connection admin = PostgresServers.connect(); Statement st = admin.createStatement()) {
            st.execute("CREATE ROLE " + role + " LOGIN SUPERUSER");
          }
          token[0] = loop.awaitLeadership(Duration.ofSeconds(30));
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      });
      store.close();
    } finally {
      try (Connection admin = PostgresServers.connect(); Statement st = admin.createStatement()) {
        st.execute("REASSIGN OWNED BY " + role + " TO CURRENT_USER");
        st.execute("DROP OWNED BY " + role);
        st.execute("DROP ROLE " + role);
      }
    }
    assertThat(log.lines().filter(l -> l.contains("WARN") && l.contains("acquire attempt failed")))
        .as("one WARN line naming the failure").hasSize(1)
        .allMatch(l -> l.contains(role), "names the role the server refused");
    assertThat(token[0]).as("leads once the login works").isPositive();
    assertThat(log).contains("acquire attempt works again after");
  }
}
