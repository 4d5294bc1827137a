package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The single call's statements: once the store has seen a name's row, a renewal, a re-acquire and
 * a contended miss are each one SQL statement; a row deleted by hand since still gets a grant
 * above every earlier token (the one-statement path falls back to the placeholder and the UPDATE).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresSingleCallTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  private final HikariDataSource pool = PostgresServers.pool(2);
  /** The SQL of every statement the store prepared, in order. */
  private final List<String> prepared = new CopyOnWriteArrayList<>();
  private final PostgresLeaseStore store = PostgresLeaseStore.builder(
      StatementRecorder.recording(pool, sql -> {
        if (sql != null) {
          prepared.add(sql);
        }
      })).build();

  @AfterEach
  void close() {
    store.close();
    pool.close();
  }

  /**
   * On a pool that is not the store's own, each statement goes behind the one that bounds it on
   * the server, in the same execute.
   */
  private static final String BOUND = "SELECT set_config('statement_timeout', '"
      + PostgresLeaseStore.DEFAULT_CALL_TIMEOUT.toMillis() + "', true); ";

  /** The lease statements in the SQL prepared since {@code from} (each of a string counts). */
  private int statementsSince(int from) {
    int n = 0;
    for (String sql : prepared.subList(from, prepared.size())) {
      assertThat(sql).as("bounded on the server").startsWith(BOUND);
      n += sql.substring(BOUND.length()).split(";").length;
    }
    return n;
  }

  @Test
  void aNameWithARowTakesOneStatementPerCall() {
    String name = "single-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant first = store.acquireOrRenew(name, a, TTL).orElseThrow();

    int from = prepared.size();
    LeaseGrant renewed = store.acquireOrRenew(name, a, TTL).orElseThrow();
    assertThat(statementsSince(from)).as("a renewal: %s", prepared.subList(from, prepared.size()))
        .isEqualTo(1);
    assertThat(prepared.get(from).substring(BOUND.length())).as("a renewal extends the expiry only"
        + " (no token drawn, no sub-select)").startsWith("UPDATE").doesNotContain("nextval")
        .doesNotContain("SELECT");
    assertThat(renewed.token()).isEqualTo(first.token());
    assertThat(renewed.expiresAt()).isAfterOrEqualTo(first.expiresAt());

    from = prepared.size();
    assertThat(store.acquireOrRenew(name, b, TTL)).isEmpty();
    assertThat(statementsSince(from)).as("a contended miss").isEqualTo(1);

    assertThat(store.release(name, a)).isTrue();
    from = prepared.size();
    LeaseGrant taken = store.acquireOrRenew(name, b, TTL).orElseThrow();
    assertThat(statementsSince(from)).as("a re-acquire after release").isEqualTo(1);
    assertThat(taken.token()).isGreaterThan(first.token());
  }

  /**
   * A renewal of a lease this store last granted to the same holder takes the one statement that
   * only extends the expiry; when that finds the lease no longer the holder's (expired, taken), the
   * call goes on to the grant, which bumps the token or refuses.
   */
  @Test
  void aRenewalOfALostLeaseStillGoesToTheGrant() {
    String name = "single-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    // a's lease runs out and b takes it through another store (another process): a's next
    // renewal here, the store's last answer having granted it to a, is refused
    LeaseGrant shortLived = store.acquireOrRenew(name, a, Duration.ofMillis(100)).orElseThrow();
    await().atMost(Duration.ofSeconds(30))
        .until(() -> store.inspect(name) instanceof dev.leases.LeaseState.Expired);
    LeaseGrant taken;
    try (PostgresLeaseStore other = PostgresLeaseStore.builder(pool).build()) {
      taken = other.acquireOrRenew(name, b, TTL).orElseThrow();
    }
    assertThat(taken.token()).isGreaterThan(shortLived.token());
    assertThat(store.acquireOrRenew(name, a, TTL)).as("a renewal after losing the lease").isEmpty();

    // b's lease runs out: b's own renewal after its expiry is a new tenure with a larger token
    store.acquireOrRenew(name, b, Duration.ofMillis(100)).orElseThrow();
    await().atMost(Duration.ofSeconds(30))
        .until(() -> store.inspect(name) instanceof dev.leases.LeaseState.Expired);
    LeaseGrant again = store.acquireOrRenew(name, b, TTL).orElseThrow();
    assertThat(again.token()).as("a renewal after the holder's own expiry")
        .isGreaterThan(taken.token());
  }

  @Test
  void aRowDeletedByHandAfterTheStoreSawItIsGrantedAboveEveryEarlierToken() throws Exception {
    String name = "single-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    long first = store.acquireOrRenew(name, a, TTL).orElseThrow().token();
    // with the holder still holding it, and again once it is free: the row goes, the store knows it
    PostgresServers.exec("DELETE FROM leases WHERE name = '" + name + "'");
    LeaseGrant again = store.acquireOrRenew(name, a, TTL).orElseThrow();
    assertThat(again.token()).as("a grant on a re-created row is a new tenure")
        .isGreaterThan(first);
    assertThat(store.inspect(name).lastToken()).isEqualTo(again.token());
    assertThat(store.release(name, a)).isTrue();
    PostgresServers.exec("DELETE FROM leases WHERE name = '" + name + "'");
    HolderId b = HolderId.generate();
    LeaseGrant other = store.acquireOrRenew(name, b, TTL).orElseThrow();
    assertThat(other.token()).isGreaterThan(again.token());
    assertThat(store.acquireOrRenew(name, a, TTL)).as("held by b on the re-created row").isEmpty();
  }

  /**
   * A follower's poll of a held name takes no row lock: while the holder renews inside an open
   * transaction (its row locked), another holder's call answers "held" at once instead of waiting
   * for that transaction (here up to a call timeout of 20 s).
   */
  @Test
  void aContendedMissDoesNotWaitForTheHoldersRowLock() throws Exception {
    String name = "single-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    try (PostgresLeaseStore patient = PostgresLeaseStore.builder(pool)
        .callTimeout(Duration.ofSeconds(20)).build()) {
      patient.acquireOrRenew(name, a, TTL).orElseThrow();
      HolderId b = HolderId.generate();
      assertThat(patient.acquireOrRenew(name, b, TTL)).isEmpty(); // the row is known now
      try (Connection tx = PostgresServers.connect()) {
        tx.setAutoCommit(false);
        patient.acquireOrRenew(tx, name, a, TTL).orElseThrow(); // row locked until rollback
        long start = System.nanoTime();
        assertThat(patient.acquireOrRenew(name, b, TTL)).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as("a miss while the holder's transaction is open").isLessThan(Duration.ofSeconds(10));
        tx.rollback();
      }
    }
  }

  /** A pool that gives its sessions the statement timeout itself: the store sends no bound. */
  @Test
  void aPoolThatBoundsItsSessionsGetsTheStatementsAlone() {
    List<String> sent = new CopyOnWriteArrayList<>();
    String name = "single-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    try (HikariDataSource bounded = poolBoundingItsSessions();
        PostgresLeaseStore s = PostgresLeaseStore.builder(StatementRecorder.recording(bounded,
            sql -> {
              if (sql != null) {
                sent.add(sql);
              }
            })).poolBoundsStatements().build()) {
      long token = s.acquireOrRenew(name, a, TTL).orElseThrow().token();
      int from = sent.size();
      assertThat(s.acquireOrRenew(name, a, TTL).orElseThrow().token()).isEqualTo(token);
      assertThat(sent.subList(from, sent.size())).as("a renewal").singleElement()
          .satisfies(sql -> assertThat(sql).startsWith("UPDATE"));
      assertThat(s.release(name, a)).isTrue();
    }
  }

  /** Declared, but not so: every call refuses with what to change, and nothing is written. */
  @Test
  void aPoolDeclaredToBoundItsSessionsThatDoesNotIsRefusedWithWhatToChange() {
    String name = "single-" + UUID.randomUUID();
    try (PostgresLeaseStore s = PostgresLeaseStore.builder(pool).poolBoundsStatements().build()) {
      for (int i = 0; i < 2; i++) {
        assertThatThrownBy(() -> s.acquireOrRenew(name, HolderId.generate(), TTL))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("statement_timeout = 0 ms")
            .hasMessageContaining("connectionInitSql = \"SET statement_timeout = 5000\"");
      }
    }
    assertThat(store.inspect(name)).as("nothing was written").isInstanceOf(LeaseState.Free.class);
  }

  /**
   * A pool that is not the store's own keeps its socket timeouts: declaring that the pool bounds
   * its sessions' statements does not let the store leave its own read timeout on the driver's
   * connection, where the pool would not put back the one its other users had.
   */
  @Test
  void aCallersPoolGetsItsConnectionsBackWithTheirOwnSocketTimeout() throws Exception {
    try (HikariDataSource shared = poolBoundingItsSessions();
        PostgresLeaseStore s = PostgresLeaseStore.builder(shared).poolBoundsStatements().build()) {
      int before;
      try (Connection c = shared.getConnection()) {
        before = c.unwrap(Connection.class).getNetworkTimeout();
      }
      s.acquireOrRenew("single-" + UUID.randomUUID(), HolderId.generate(), TTL).orElseThrow();
      try (Connection c = shared.getConnection()) {
        assertThat(c.unwrap(Connection.class).getNetworkTimeout()).isEqualTo(before);
      }
    }
  }

  /**
   * A pool of one connection whose sessions carry a statement timeout of 5 s, handing out
   * autocommit READ COMMITTED connections (what {@code poolBoundsStatements()} declares).
   */
  private static HikariDataSource poolBoundingItsSessions() {
    return PostgresServers.pool(PostgresServers.url(), 1, config -> {
      config.setAutoCommit(true);
      config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
      config.setConnectionInitSql("SET statement_timeout = 5000");
    });
  }
}
