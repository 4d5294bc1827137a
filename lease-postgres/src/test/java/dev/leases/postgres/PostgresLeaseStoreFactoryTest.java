package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class PostgresLeaseStoreFactoryTest {

  private final PostgresLeaseStoreFactory factory = new PostgresLeaseStoreFactory();

  @Test
  void missingOrBadSettingsAreRefusedWithTheKeyInTheMessage() {
    assertThatThrownBy(() -> factory.open(Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'jdbcUrl'");
    assertThatThrownBy(() -> factory.open(Map.of("jdbcUrl", "jdbc:mysql://localhost/x")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbc:postgresql:");
    assertThatThrownBy(() -> factory.open(Map.of("jdbcUrl", PostgresServers.url(), "tabel", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[tabel]").hasMessageContaining("table");
    assertThatThrownBy(() -> factory.open(Map.of("jdbcUrl", PostgresServers.url(),
        "table", "x; drop table leases")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[a-z_][a-z0-9_]*");
    assertThatThrownBy(() -> factory.open(Map.of("jdbcUrl", PostgresServers.url(),
        "callTimeoutMillis", "5s")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeoutMillis");
    assertThatThrownBy(() -> factory.open(Map.of("jdbcUrl", PostgresServers.url(),
        "callTimeoutMillis", "0")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeout");
  }

  /** The factory's store owns its pool (and LISTEN connection) and closes them with itself. */
  @Test
  void theOpenedStoreWorksAndClosesItsOwnConnections() throws Exception {
    String app = "factory-" + UUID.randomUUID().toString().substring(0, 8);
    Map<String, String> settings = new HashMap<>();
    String url = PostgresServers.url();
    settings.put("jdbcUrl", url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + app);
    settings.put("callTimeoutMillis", "2000");
    PostgresLeaseStore store = factory.open(settings);
    String name = "factory-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    assertThat(store.acquireOrRenew(name, a, Duration.ofSeconds(2))).isPresent();
    store.onRelease(name, () -> {});
    assertThat(sessions(app)).as("pool connection and LISTEN connection").isGreaterThanOrEqualTo(2);
    store.close();
    assertThatThrownBy(() -> store.token(name)).isInstanceOf(LeaseStoreClosedException.class);
    await("its connections are closed").atMost(Duration.ofSeconds(15))
        .until(() -> sessions(app) == 0);
  }

  /**
   * The factory's pool bounds its statements on the server (a session statement_timeout of the
   * call timeout, instead of a client timer per statement): a call waiting on a row lock is
   * cancelled by the server (57014), single and batch alike, well before the socket timeout.
   */
  @Test
  void aCallWaitingOnARowLockIsCancelledByTheServerAfterTheCallTimeout() throws Exception {
    PostgresLeaseStore store = factory.open(Map.of("jdbcUrl", PostgresServers.url(),
        "callTimeoutMillis", "500"));
    try (Connection tx = PostgresServers.connect()) {
      String name = "factory-" + UUID.randomUUID();
      String free = name + "-free";
      HolderId a = HolderId.generate();
      assertThat(store.acquireOrRenewAll(List.of(name, free), a, Duration.ofSeconds(30)))
          .hasSize(2);
      assertThat(store.release(free, a)).isTrue();
      tx.setAutoCommit(false);
      try (PreparedStatement lock = tx.prepareStatement(
          "SELECT 1 FROM leases WHERE name IN (?, ?) FOR UPDATE")) {
        lock.setString(1, name);
        lock.setString(2, free);
        lock.executeQuery().close();
      }
      assertThatThrownBy(() -> store.acquireOrRenew(name, a, Duration.ofSeconds(30)))
          .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining("57014");
      assertThatThrownBy(() -> store.acquireOrRenewAll(List.of(name), a, Duration.ofSeconds(30)))
          .as("the renewal fast path").isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("57014");
      assertThatThrownBy(() -> store.acquireOrRenewAll(List.of(free), HolderId.generate(),
          Duration.ofSeconds(30))).as("the full path, for a free name")
          .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining("57014");
      assertThat(store.acquireOrRenewAll(List.of(name), HolderId.generate(),
          Duration.ofSeconds(30)).get(name)).as("the full path refuses a held name unlocked")
          .isInstanceOf(AcquireResult.Refused.class);
      tx.rollback();
      assertThat(store.acquireOrRenew(name, a, Duration.ofSeconds(30))).isPresent();
    } finally {
      store.close();
    }
  }

  @Test
  void openingSucceedsWhileTheDatabaseIsDown() {
    PostgresLeaseStore store = factory.open(Map.of(
        "jdbcUrl", "jdbc:postgresql://127.0.0.1:" + dev.leases.tck.servers.FreePorts.pick()
            + "/postgres", "callTimeoutMillis", "500"));
    try {
      assertThatThrownBy(() -> store.inspect("x"))
          .isInstanceOf(dev.leases.LeaseStoreUnavailableException.class);
    } finally {
      store.close();
    }
  }

  private static int sessions(String applicationName) throws SQLException {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
      ps.setString(1, applicationName);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
