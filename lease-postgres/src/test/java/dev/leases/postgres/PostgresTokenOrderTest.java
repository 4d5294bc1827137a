package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Invariant 3 against out-of-band deletes: a token is drawn only once the row is locked, so a grant
 * that waited behind a delete never carries a token lower than one issued meanwhile.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PostgresTokenOrderTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final HikariDataSource pool = PostgresServers.pool(12);
  private final PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build();

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
    pool.close();
  }

  private static String name() {
    return "order-" + UUID.randomUUID();
  }

  /**
   * The interleaving, made deterministic by an open transaction: X deletes the row (uncommitted);
   * B's acquire on the pool waits behind X; inside X, C is granted (a token drawn after B's call
   * began) and the row is deleted again; X commits; B's acquire goes on. B's token must exceed C's.
   * In both of pgjdbc's query modes: "simple" sends the acquire's two statements as two
   * transactions.
   */
  @ParameterizedTest
  @ValueSource(strings = {"extended", "simple"})
  void aGrantThatWaitedBehindADeleteIsAboveEveryTokenIssuedWhileItWaited(String queryMode)
      throws Exception {
    HikariDataSource modePool = PostgresServers.pool(
        PostgresServers.url() + "&preferQueryMode=" + queryMode, 2, config -> {});
    try (modePool; PostgresLeaseStore store = PostgresLeaseStore.builder(modePool).build()) {
      aGrantThatWaitedBehindADeleteIsAboveEveryTokenIssuedWhileItWaited(store);
    }
  }

  private void aGrantThatWaitedBehindADeleteIsAboveEveryTokenIssuedWhileItWaited(
      PostgresLeaseStore store) throws Exception {
    String name = name();
    HolderId a = HolderId.generate();
    long first = store.acquireOrRenew(name, a, TTL).orElseThrow().token();
    assertThat(store.release(name, a)).isTrue();
    try (Connection x = PostgresServers.connect()) {
      x.setAutoCommit(false);
      int xPid = backendPid(x);
      delete(x, name);
      Future<Optional<LeaseGrant>> racing =
          executor.submit(() -> store.acquireOrRenew(name, HolderId.generate(), TTL));
      await("the racing acquire waits behind X's delete").atMost(Duration.ofSeconds(30))
          .until(() -> blockedBy(xPid) > 0);
      long c = store.acquireOrRenew(x, name, HolderId.generate(), TTL).orElseThrow().token();
      assertThat(c).isGreaterThan(first);
      delete(x, name);
      x.commit();
      LeaseGrant b = racing.get(60, TimeUnit.SECONDS).orElseThrow();
      assertThat(b.token()).as("token of the grant that waited, after %d was issued", c)
          .isGreaterThan(c);
    }
  }

  /**
   * The same race under load: contenders grant and release one name in a loop while deleters, in
   * transactions of their own, delete the row, take a grant on their connection, delete again and
   * commit. A trigger logs every grant (a row written with a holder) in the order the writes to the
   * row happened, which for one name is the commit order (each write waits for the previous
   * writer's transaction); the tokens in that log must strictly increase.
   */
  @Test
  void underConcurrentDeletesEveryGrantIsAboveEveryGrantCommittedBeforeIt() throws Exception {
    String table = PostgresServers.freshTable();
    String name = name();
    int contenders = 6;
    int rounds = 40;
    int deleters = 2;
    try (PostgresLeaseStore tableStore = PostgresLeaseStore.builder(pool).table(table).build()) {
      tableStore.inspect(name); // creates the table
      PostgresServers.exec("CREATE TABLE " + table + "_log"
          + " (seq bigserial PRIMARY KEY, token bigint NOT NULL);"
          + " CREATE FUNCTION " + table + "_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
          + " INSERT INTO " + table + "_log (token) VALUES (NEW.token); RETURN NULL; END $$;"
          + " CREATE TRIGGER log_grants AFTER INSERT OR UPDATE ON " + table
          + " FOR EACH ROW WHEN (NEW.holder IS NOT NULL) EXECUTE FUNCTION " + table + "_log()");
      AtomicBoolean done = new AtomicBoolean();
      CyclicBarrier start = new CyclicBarrier(contenders + deleters);
      List<Future<?>> contending = new ArrayList<>();
      for (int i = 0; i < contenders; i++) {
        HolderId holder = HolderId.generate();
        contending.add(executor.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          for (int r = 0; r < rounds; r++) {
            if (tableStore.acquireOrRenew(name, holder, TTL).isPresent()) {
              tableStore.release(name, holder);
            }
          }
          return null;
        }));
      }
      List<Future<?>> deleting = new ArrayList<>();
      for (int i = 0; i < deleters; i++) {
        HolderId holder = HolderId.generate();
        deleting.add(executor.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          try (Connection c = PostgresServers.connect()) {
            c.setAutoCommit(false);
            while (!done.get()) {
              delete(c, table, name);
              tableStore.acquireOrRenew(c, name, holder, TTL);
              delete(c, table, name);
              c.commit();
            }
          }
          return null;
        }));
      }
      try {
        for (Future<?> f : contending) {
          f.get(150, TimeUnit.SECONDS);
        }
      } finally {
        done.set(true);
      }
      for (Future<?> f : deleting) {
        f.get(30, TimeUnit.SECONDS);
      }
      List<Long> log = new ArrayList<>();
      try (Connection c = PostgresServers.connect(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT token FROM " + table + "_log ORDER BY seq")) {
        while (rs.next()) {
          log.add(rs.getLong(1));
        }
      }
      assertThat(log).as("grants logged").hasSizeGreaterThan(rounds);
      for (int i = 1; i < log.size(); i++) {
        assertThat(log.get(i)).as("grant %d of %d in commit order, after %s", i, log.size(),
            log.subList(Math.max(0, i - 3), i)).isGreaterThan(log.get(i - 1));
      }
    } finally {
      PostgresServers.exec("DROP TABLE IF EXISTS " + table + ", " + table + "_log;"
          + " DROP FUNCTION IF EXISTS " + table + "_log();"
          + " DROP SEQUENCE IF EXISTS " + table + "_token_seq");
    }
  }

  /**
   * A placeholder row (what the acquire's first statement inserts; left committed on its own in
   * pgjdbc's simple query mode if the second statement then fails) is read as no row: the bound,
   * never its token 1.
   */
  @Test
  void aPlaceholderRowReadsAsNoRowAndIsGrantedAboveEveryEarlierToken() throws Exception {
    String name = name();
    HolderId a = HolderId.generate();
    long t = store.acquireOrRenew(name, a, TTL).orElseThrow().token();
    try (Connection c = PostgresServers.connect()) {
      delete(c, name);
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO leases (name, holder, token,"
          + " expires_at) VALUES (?, NULL, 1, '-infinity')")) {
        ps.setString(1, name);
        ps.executeUpdate();
      }
    }
    assertThat(store.token(name).orElseThrow()).isGreaterThanOrEqualTo(t);
    assertThat(store.inspect(name)).isInstanceOf(LeaseState.Free.class);
    assertThat(store.inspect(name).lastToken()).isGreaterThanOrEqualTo(t);
    assertThat(store.acquireOrRenew(name, a, TTL).orElseThrow().token()).isGreaterThan(t);
  }

  private static int backendPid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static int blockedBy(int pid) throws SQLException {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static void delete(Connection c, String name) throws SQLException {
    delete(c, "leases", name);
  }

  private static void delete(Connection c, String table, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + table + " WHERE name = ?")) {
      ps.setString(1, name);
      ps.executeUpdate();
    }
  }
}
