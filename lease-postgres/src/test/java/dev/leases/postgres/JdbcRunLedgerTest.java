package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunFailedException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunOutcome;
import dev.leases.once.RunRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link JdbcRunLedger} and {@link ExactlyOnce} over it, in this JVM, on the shared server. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcRunLedgerTest {

  static final String EFFECTS = "once_test_effects";

  private static HikariDataSource pool;
  private static PostgresLeaseStore store;
  private static JdbcRunLedger ledger;

  @BeforeAll
  static void setUp() throws SQLException {
    pool = PostgresServers.pool(8);
    store = PostgresLeaseStore.builder(pool).build();
    ledger = JdbcRunLedger.builder(pool).build();
    createEffects(pool);
  }

  @AfterAll
  static void tearDown() {
    store.close();
    pool.close();
  }

  /** The business table the tests' work writes to, in the run's transaction. */
  static void createEffects(javax.sql.DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS + " (id bigserial PRIMARY KEY,"
          + " job text NOT NULL, run text NOT NULL, token bigint NOT NULL, who text NOT NULL)");
    }
  }

  static void insertEffect(Connection c, String job, String run, long token, String who)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + EFFECTS + " (job, run, token, who) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, job);
      ps.setString(2, run);
      ps.setLong(3, token);
      ps.setString(4, who);
      ps.executeUpdate();
    }
  }

  /** The tokens of the effect rows of (job, run), in insertion order. */
  static List<Long> effectTokens(javax.sql.DataSource ds, String job, String run)
      throws SQLException {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT token FROM " + EFFECTS + " WHERE job = ? AND run = ? ORDER BY id")) {
      ps.setString(1, job);
      ps.setString(2, run);
      List<Long> out = new java.util.ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getLong(1));
        }
      }
      return out;
    }
  }

  /** COMPLETED rows of (job, run) in the attempts table, read with plain SQL. */
  static int completedRows(javax.sql.DataSource ds, String table, String job, String run)
      throws SQLException {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT count(*) FROM " + table + " WHERE job = ? AND run = ? AND status = 'COMPLETED'")) {
      ps.setString(1, job);
      ps.setString(2, run);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static String job() {
    return "job-" + UUID.randomUUID();
  }

  private ExactlyOnce<Connection> runner() {
    return ExactlyOnce.builder(store, ledger).ttl(Duration.ofSeconds(2)).build();
  }

  @Test
  void theWorkAndTheCompletionCommitTogetherAndASecondFiringDoesNotRunIt() throws Exception {
    String job = job();
    try (ExactlyOnce<Connection> a = runner(); ExactlyOnce<Connection> b = runner()) {
      RunOutcome first = a.run(job, "2026-01-31",
          (c, ctx) -> insertEffect(c, job, "2026-01-31", ctx.token(), "a"));
      RunOutcome second = b.run(job, "2026-01-31",
          (c, ctx) -> insertEffect(c, job, "2026-01-31", ctx.token(), "b"));

      assertThat(first).isInstanceOf(RunOutcome.Completed.class);
      long token = ((RunOutcome.Completed) first).token();
      assertThat(second).isEqualTo(new RunOutcome.AlreadyCompleted(
          ((RunOutcome.Completed) first).record()));
      assertThat(effectTokens(pool, job, "2026-01-31")).containsExactly(token);
      assertThat(completedRows(pool, JdbcRunLedger.DEFAULT_TABLE, job, "2026-01-31")).isOne();
      assertThat(ledger.completion(job, "2026-01-31")).contains(
          ((RunOutcome.Completed) first).record());
    }
  }

  @Test
  void workThatThrowsRollsBackItsWritesIsRecordedFailedAndIsRetried() throws Exception {
    String job = job();
    try (ExactlyOnce<Connection> a = runner()) {
      assertThatThrownBy(() -> a.run(job, "r", (c, ctx) -> {
        insertEffect(c, job, "r", ctx.token(), "a");
        throw new SQLException("constraint we pretend failed", "23514");
      })).isInstanceOf(RunFailedException.class).hasCauseInstanceOf(SQLException.class);
      assertThat(effectTokens(pool, job, "r")).isEmpty();

      RunOutcome retry = a.run(job, "r", (c, ctx) -> insertEffect(c, job, "r", ctx.token(), "a"));
      assertThat(retry).isInstanceOf(RunOutcome.Completed.class);
      assertThat(effectTokens(pool, job, "r")).containsExactly(((RunOutcome.Completed) retry).token());
      List<RunRecord> history = ledger.history(job, 10);
      assertThat(history).extracting(RunRecord::status)
          .containsExactly(RunRecord.Status.COMPLETED, RunRecord.Status.FAILED);
      assertThat(history.get(1).failure())
          .isEqualTo("java.sql.SQLException: constraint we pretend failed");
      assertThat(history.get(1).finished()).isNotNull();
    }
  }

  @Test
  void aSupersededAttemptCannotCompleteAndItsWritesRollBack() throws Exception {
    String job = job();
    HolderId old = HolderId.generate();
    HolderId successor = HolderId.generate();
    RunRecord first = ledger.begin(job, "r", 5, old);
    RunRecord second = ledger.begin(job, "r", 6, successor);
    assertThatThrownBy(() -> ledger.begin(job, "r", 5, old))
        .isInstanceOf(FencedOutException.class);

    assertThatThrownBy(() -> ledger.complete(first, c -> insert(c, job, 5)))
        .isInstanceOf(FencedOutException.class)
        .satisfies(e -> assertThat(((FencedOutException) e).highestToken()).isEqualTo(6));
    assertThat(effectTokens(pool, job, "r")).isEmpty();

    RunRecord done = ledger.complete(second, c -> insert(c, job, 6));
    assertThat(done.status()).isEqualTo(RunRecord.Status.COMPLETED);
    assertThat(done.attempt()).isEqualTo(second.attempt());
    assertThat(effectTokens(pool, job, "r")).containsExactly(6L);
    assertThat(ledger.begin(job, "r", 7, old)).as("a later begin sees the completion")
        .isEqualTo(done);
    assertThat(ledger.fail(first, "fenced out").status()).isEqualTo(RunRecord.Status.FAILED);
    assertThat(ledger.history(job, 10)).extracting(RunRecord::attempt)
        .containsExactly(second.attempt(), first.attempt());
  }

  private static void insert(Connection c, String job, long token) {
    try {
      insertEffect(c, job, "r", token, "direct");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The work must leave the transaction to the ledger: work that turns autocommit on is refused
   * before the completion is written, which would otherwise commit apart from the work.
   */
  @Test
  void workThatTurnsAutocommitOnIsRefusedAndTheRunIsNotRecordedCompleted() throws Exception {
    String job = job();
    RunRecord started = ledger.begin(job, "r", 3, HolderId.generate());
    assertThatThrownBy(() -> ledger.complete(started, c -> {
      try {
        c.setAutoCommit(true);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("turned autocommit on");
    assertThat(ledger.completion(job, "r")).isEmpty();
    assertThat(completedRows(pool, JdbcRunLedger.DEFAULT_TABLE, job, "r")).isZero();
  }

  @Test
  void aSecondCompletionOfTheRunIsImpossibleEvenUnderTheSameFence() throws Exception {
    String job = job();
    HolderId h = HolderId.generate();
    RunRecord one = ledger.begin(job, "r", 9, h);
    RunRecord two = ledger.begin(job, "r", 9, h); // the same tenure, e.g. a retried process
    RunRecord done = ledger.complete(one, c -> insert(c, job, 9));
    RunRecord again = ledger.complete(two, c -> insert(c, job, 9));
    assertThat(again).as("the other attempt's completion comes back").isEqualTo(done);
    assertThat(effectTokens(pool, job, "r")).hasSize(1);
    assertThat(completedRows(pool, JdbcRunLedger.DEFAULT_TABLE, job, "r")).isOne();
  }

  @Test
  void aRunnerPausedInsideItsFinalCheckIsCutOffSoASuccessorCanBegin() throws Exception {
    String job = job();
    java.util.concurrent.CountDownLatch paused = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch resume = new java.util.concurrent.CountDownLatch(1);
    JdbcRunLedger pausing = JdbcRunLedger.builder(pool).callTimeout(Duration.ofMillis(800))
        .beforeCommit(() -> {
          paused.countDown(); // the fence row is locked by this transaction now
          try {
            resume.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }).build();
    RunRecord old = pausing.begin(job, "r", 5, HolderId.generate());
    java.util.concurrent.CompletableFuture<RunRecord> oldCompletion =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> pausing.complete(old, c -> insert(c, job, 5)));
    assertThat(paused.await(30, TimeUnit.SECONDS)).isTrue();

    // the successor's begin waits for the fence row; the server ends the paused session
    RunRecord successor = JdbcRunLedger.builder(pool).callTimeout(Duration.ofSeconds(20)).build()
        .begin(job, "r", 6, HolderId.generate());
    assertThat(successor.status()).isEqualTo(RunRecord.Status.STARTED);
    resume.countDown();
    assertThatThrownBy(oldCompletion::join)
        .hasCauseInstanceOf(LeaseStoreUnavailableException.class);
    assertThat(effectTokens(pool, job, "r")).as("the paused runner's writes").isEmpty();
    assertThat(ledger.complete(successor, c -> insert(c, job, 6)).status())
        .isEqualTo(RunRecord.Status.COMPLETED);
    assertThat(effectTokens(pool, job, "r")).containsExactly(6L);
  }

  @Test
  void connectionsAtSerializableAreForcedToReadCommitted() throws Exception {
    String job = job();
    try (HikariDataSource serializable = PostgresServers.pool(PostgresServers.url(), 3,
        c -> c.setTransactionIsolation("TRANSACTION_SERIALIZABLE"))) {
      JdbcRunLedger l = JdbcRunLedger.builder(serializable).build();
      int[] seen = new int[1];
      RunRecord a = l.begin(job, "r", 1, HolderId.generate());
      l.complete(a, c -> {
        try {
          seen[0] = c.getTransactionIsolation();
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(seen[0]).isEqualTo(Connection.TRANSACTION_READ_COMMITTED);
    }
  }

  @Test
  void aBeginBlockedOnTheFenceRowFailsWithinTheCallTimeout() throws Exception {
    String job = job();
    JdbcRunLedger quick = JdbcRunLedger.builder(pool).callTimeout(Duration.ofMillis(500)).build();
    quick.begin(job, "r", 1, HolderId.generate());
    try (Connection locker = pool.getConnection()) {
      locker.setAutoCommit(false);
      try (PreparedStatement ps = locker.prepareStatement(
          "SELECT fence FROM " + JdbcFence.DEFAULT_TABLE + " WHERE resource = ? FOR UPDATE")) {
        ps.setString(1, RunKeys.leaseName(job));
        ps.executeQuery().close();
      }
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> quick.begin(job, "r", 2, HolderId.generate()))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(20));
      locker.rollback();
    }
  }

  @Test
  void hostileOrOverlongTableNamesAreRefused() {
    for (String bad : List.of("runs; DROP TABLE x", "Runs", "a.b.c", "\"runs\"", "",
        "r".repeat(54), "x\u0000")) {
      assertThatThrownBy(() -> JdbcRunLedger.builder(pool).table(bad))
          .as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("run table name must be a lower-case identifier");
      if (bad.length() < 54) {
        assertThatThrownBy(() -> JdbcRunLedger.builder(pool).fenceTable(bad))
            .as(bad).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("fence table name must be a lower-case identifier");
      }
    }
    assertThat(JdbcRunLedger.schemaSql("r".repeat(53))).hasSize(3);
  }

  @Test
  void tablesInAnotherSchemaAreCreatedOnFirstUse() throws Exception {
    String schema = "once_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    }
    JdbcRunLedger l = JdbcRunLedger.builder(pool).table(schema + ".runs")
        .fenceTable(schema + ".fences").build();
    String job = job();
    RunRecord a = l.begin(job, "r", 3, HolderId.generate());
    l.complete(a, c -> {});
    assertThat(completedRows(pool, schema + ".runs", job, "r")).isOne();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_indexes WHERE schemaname = '"
            + schema + "' AND indexname IN ('runs_completed', 'runs_job')")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(2);
    }
  }
}
