package dev.leases.postgres;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Run records in PostgreSQL, for {@link dev.leases.once.ExactlyOnce}: the work gets a JDBC
 * {@link Connection} whose transaction also carries the fence check and the completion record, so
 * the work's writes and "(job, run) is done" commit together or not at all.
 *
 * <pre>{@code
 * ExactlyOnce<Connection> once = ExactlyOnce.builder(store, JdbcRunLedger.builder(pool).build())
 *     .ttl(Duration.ofSeconds(30)).build();
 * once.run("invoice-run", "2026-01-31", (connection, ctx) -> {
 *   try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoices ...")) { ... }
 * });
 * }</pre>
 *
 * <p>Tables: the attempts table ({@value #DEFAULT_TABLE} by default: one row per attempt, a
 * partial unique index on {@code (job, run) WHERE status = 'COMPLETED'}), and the job's fence, a
 * row {@code once/<job>} in a {@link JdbcFence} table ({@value JdbcFence#DEFAULT_TABLE} by default;
 * the same fence a {@code JdbcFence} user writes to under that resource name). Both are created if
 * absent ({@link #schemaSql} gives the DDL for hand-managed schemas).
 *
 * <p>How each step commits, and the races:
 * <ul>
 *   <li>{@link #begin} is its own short transaction: raise the fence to the token ({@code WHERE
 *       fence <= token}), then read the completion (a new READ COMMITTED snapshot, taken after the
 *       raise, hence after any completion that held the fence row), then insert a STARTED row.
 *   <li>{@link #complete} opens a transaction, runs the work on it (the fence row is not locked
 *       meanwhile, so a successor can begin at any time), then, briefly: advance the fence
 *       {@code WHERE fence <= token}, mark the attempt COMPLETED, commit. Zero rows from the fence
 *       (a successor began with a higher token) rolls everything back: {@link FencedOutException}.
 *       A second COMPLETED row for (job, run) is impossible (the unique index); should one race in,
 *       this attempt rolls back and the other's record is returned.
 *   <li>A runner paused during its work and resumed after a successor began is refused at the fence
 *       when it tries to complete; its writes roll back. A runner that dies at any point leaves
 *       nothing: the server rolls its transaction back when the connection drops.
 *   <li>A successor that begins while a runner is in its final check waits for that row lock (at
 *       most the call timeout) and then sees the completion. A runner paused <em>inside</em> its
 *       final check (holding the fence row) is cut off by the server: the final check sets
 *       {@code idle_in_transaction_session_timeout} to the call timeout for the rest of the
 *       transaction, so its session ends and rolls back, and the row is free again.
 *   <li>All transactions are READ COMMITTED (set unless the pool vouches for it: a HikariCP pool
 *       in autocommit with that level or none configured). Every statement of the ledger's own is
 *       bounded by the call timeout (server-side statement timeout and a socket timeout); the work
 *       is not, and its statements run with the connection's own timeouts.
 * </ul>
 *
 * <p>Thread-safe; it never closes its DataSource.
 */
public final class JdbcRunLedger implements RunLedger<Connection> {

  /** The attempts table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "lease_runs";

  private static final String COMPLETED_INDEX = "_completed";
  private static final String JOB_INDEX = "_job";
  private static final int MAX_TABLE = SqlNames.MAX_IDENTIFIER - COMPLETED_INDEX.length();
  private static final Duration MAX_CALL_TIMEOUT = Duration.ofHours(1);
  private static final String COLUMNS =
      "attempt, job, run, token, holder, status, started_at, finished_at, failure";

  private final DataSource dataSource;
  private final SqlNames names;
  private final Duration callTimeout;
  /** Whether the pool's connections come at READ COMMITTED, so the level need not be set. */
  private final PoolIsolation isolation;
  private final JdbcFence fence;
  private final @Nullable SchemaCreator schema;
  private volatile boolean fenceReady;
  private final Runnable beforeCommit;
  private final String completionSql;
  private final String insertSql;
  private final String finishSql;
  private final String attemptSql;
  private final String historySql;
  private final String cutOffSql;

  private JdbcRunLedger(Builder b) {
    this.dataSource = b.dataSource;
    this.isolation = PoolIsolation.of(dataSource);
    this.names = b.names;
    this.callTimeout = b.callTimeout;
    this.beforeCommit = b.beforeCommit;
    this.fence = JdbcFence.builder(dataSource).table(b.fenceTable).callTimeout(callTimeout)
        .createTable(b.createTable).build();
    List<String> ddl = ddl(names);
    this.schema = !b.createTable ? null : new SchemaCreator(dataSource, callTimeout,
        names, List.of(
            new SchemaCreator.Relation(names.quotedTable(), ddl.get(0)),
            new SchemaCreator.Relation(names.quoted(names.table() + COMPLETED_INDEX), ddl.get(1)),
            new SchemaCreator.Relation(names.quoted(names.table() + JOB_INDEX), ddl.get(2))));
    String t = names.quotedTable();
    // Each statement is bounded on the server (Jdbc.serverBound): the work's transaction goes on
    // after some of them, and on a stalled network the driver's query timeout made a call wait 10 s.
    this.completionSql = Jdbc.serverBound("SELECT " + COLUMNS + " FROM " + t
        + " WHERE job = ? AND run = ? AND status = 'COMPLETED'", callTimeout);
    this.insertSql = Jdbc.serverBound("INSERT INTO " + t + " (job, run, token, holder, status)"
        + " VALUES (?, ?, ?, ?, 'STARTED') RETURNING " + COLUMNS, callTimeout);
    this.finishSql = Jdbc.serverBound("UPDATE " + t + " SET status = ?,"
        + " finished_at = clock_timestamp(), failure = ? WHERE attempt = ? AND job = ?"
        + " AND status = 'STARTED' RETURNING " + COLUMNS, callTimeout);
    this.attemptSql = Jdbc.serverBound("SELECT " + COLUMNS + " FROM " + t
        + " WHERE attempt = ? AND job = ?", callTimeout);
    this.historySql = Jdbc.serverBound("SELECT " + COLUMNS + " FROM " + t
        + " WHERE job = ? ORDER BY attempt DESC LIMIT ?", callTimeout);
    this.cutOffSql = Jdbc.serverBound("SELECT set_config('idle_in_transaction_session_timeout',"
        + " ?, true), " + Jdbc.DURABLE, callTimeout);
  }

  /** Starts configuring a ledger whose tables live in {@code dataSource}'s database. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource must not be null"));
  }

  /**
   * The DDL of the attempts table {@code table} (with its indexes), each {@code IF NOT EXISTS}, for
   * schemas managed by hand; add {@link JdbcFence#schemaSql} for the fence table.
   */
  public static List<String> schemaSql(String table) {
    return ddl(parseTable(table));
  }

  /**
   * The least a role needs to run jobs through a ledger on attempts table {@code table} and fence
   * table {@code fenceTable}, as {@code GRANT} statements an administrator runs after
   * {@link #schemaSql} and {@link JdbcFence#schemaSql}: {@code USAGE} on qualified tables'
   * schemas, {@code SELECT, INSERT, UPDATE} on both tables (the attempts' identity column needs no
   * grant of its own); no DDL (see {@link Builder#createTable}). A refused call throws
   * {@link PostgresPermissionException}.
   *
   * @param role as for {@link PostgresLeaseStore#grantsSql}
   */
  public static List<String> grantsSql(String table, String fenceTable, String role) {
    SqlNames n = parseTable(table);
    List<String> grants = new ArrayList<>(Privileges.grants(role,
        Privileges.withSchema(n, Privileges.table(n, "SELECT", "INSERT", "UPDATE"))));
    for (String g : JdbcFence.grantsSql(fenceTable, role)) {
      if (!grants.contains(g)) { // the schema's USAGE, when both tables share it
        grants.add(g);
      }
    }
    return List.copyOf(grants);
  }

  private static List<String> ddl(SqlNames n) {
    String t = n.quotedTable();
    return List.of(
        "CREATE TABLE IF NOT EXISTS " + t + " ("
            + "attempt bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "job text NOT NULL, "
            + "run text NOT NULL, "
            + "token bigint NOT NULL CHECK (token > 0), "
            + "holder text NOT NULL, "
            + "status text NOT NULL CHECK (status IN ('STARTED', 'COMPLETED', 'FAILED')), "
            + "started_at timestamptz NOT NULL DEFAULT clock_timestamp(), "
            + "finished_at timestamptz NULL, "
            + "failure text NULL)",
        // index names are unqualified: an index lives in its table's schema
        "CREATE UNIQUE INDEX IF NOT EXISTS \"" + n.table() + COMPLETED_INDEX + "\" ON " + t
            + " (job, run) WHERE status = 'COMPLETED'",
        "CREATE INDEX IF NOT EXISTS \"" + n.table() + JOB_INDEX + "\" ON " + t
            + " (job, attempt DESC)");
  }

  private static SqlNames parseTable(String table) {
    return SqlNames.parse("run table", table, MAX_TABLE, 2 * SqlNames.MAX_IDENTIFIER + 1);
  }

  @Override
  public Optional<RunRecord> completion(String job, String run) {
    RunKeys.check(job, run);
    return autocommit("reading the completion of run '" + run + "' of job '" + job + "'",
        c -> completion(c, job, run));
  }

  @Override
  public RunRecord begin(String job, String run, long token, HolderId holder) {
    RunKeys.check(job, run);
    Objects.requireNonNull(holder, "holder must not be null");
    String what = "beginning run '" + run + "' of job '" + job + "' with token " + token;
    try {
      return transaction(what, (c, networkTimeout) -> {
        fence.advanceInTransaction(c, RunKeys.leaseName(job), token);
        Optional<RunRecord> done = completion(c, job, run);
        return done.isPresent() ? done.get() : insertStarted(c, job, run, token, holder);
      });
    } catch (SQLException e) {
      throw Jdbc.failed(what + " (run table " + names + ")", e,
          "if the commit failed, the outcome is unknown; otherwise nothing was recorded");
    }
  }

  @Override
  public RunRecord complete(RunRecord attempt, Consumer<Connection> work) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(work, "work must not be null");
    String what = "completing attempt " + attempt.attempt() + " of run '" + attempt.run()
        + "' of job '" + attempt.job() + "' with token " + attempt.token();
    try {
      return transaction(what, (c, networkTimeout) -> {
        c.setNetworkTimeout(Jdbc.DIRECT, networkTimeout); // the work is not ours to bound
        work.accept(c);
        if (c.getAutoCommit()) {
          throw new IllegalStateException(what + ": the work turned autocommit on, so its writes"
              + " may have been committed without the completion, which was not recorded; leave"
              + " the transaction to the ledger, which commits the work and the completion"
              + " together");
        }
        c.setNetworkTimeout(Jdbc.DIRECT, socketTimeoutMillis());
        cutOffIfPaused(c);
        fence.advanceInTransaction(c, RunKeys.leaseName(attempt.job()), attempt.token());
        Optional<RunRecord> completed = finish(c, attempt, RunRecord.Status.COMPLETED, null);
        if (completed.isEmpty()) {
          throw new LeaseException(what + ": the attempt is no longer STARTED in run table "
              + names + " (was it finished by hand?); rolled back");
        }
        beforeCommit.run();
        return completed.get();
      });
    } catch (SQLException e) {
      if ("23505".equals(e.getSQLState())) { // another attempt completed (job, run) first
        return completion(attempt.job(), attempt.run()).orElseThrow(() -> Jdbc.failed(
            what + ": unique violation, yet no completion is visible", e, "rolled back"));
      }
      throw Jdbc.failed(what + " (run table " + names + ")", e,
          "if the commit failed, the outcome is unknown; otherwise the work was rolled back");
    }
  }

  @Override
  public RunRecord fail(RunRecord attempt, String failure) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(failure, "failure must not be null");
    String cut = RunRecord.failureText(failure);
    return autocommit("recording the failure of attempt " + attempt.attempt() + " of job '"
        + attempt.job() + "'", c -> {
          Optional<RunRecord> failed = finish(c, attempt, RunRecord.Status.FAILED, cut);
          if (failed.isPresent()) {
            return failed.get();
          }
          try (PreparedStatement ps = c.prepareStatement(attemptSql)) {
            ps.setLong(1, attempt.attempt());
            ps.setString(2, attempt.job());
            List<RunRecord> rows = records(ps);
            if (rows.isEmpty()) {
              throw new IllegalArgumentException("attempt " + attempt.attempt() + " of job '"
                  + attempt.job() + "' is not in run table " + names);
            }
            return rows.get(0);
          }
        });
  }

  @Override
  public List<RunRecord> history(String job, int limit) {
    RunKeys.checkJob(job);
    RunKeys.checkLimit(limit);
    return autocommit("reading the history of job '" + job + "'", c -> {
      try (PreparedStatement ps = c.prepareStatement(historySql)) {
        ps.setString(1, job);
        ps.setInt(2, limit);
        return records(ps);
      }
    });
  }

  private interface InTransaction<R> {
    R run(Connection c, int networkTimeout) throws SQLException;
  }

  /**
   * Runs {@code body} in a new READ COMMITTED transaction and commits it; rolls back on any
   * failure and rethrows it ({@code networkTimeout} is the connection's own, to restore).
   */
  private <R> R transaction(String what, InTransaction<R> body) throws SQLException {
    ensureSchema();
    Connection c = connect(what);
    try {
      int networkTimeout = c.getNetworkTimeout();
      Jdbc.prepare(c, isolation, callTimeout);
      c.setAutoCommit(false);
      try {
        R result = body.run(c, networkTimeout);
        c.commit();
        endTransaction(c, networkTimeout);
        return result;
      } catch (SQLException | RuntimeException | Error e) {
        Jdbc.rollbackQuietly(c, e, callTimeout);
        throw e;
      }
    } finally {
      close(c);
    }
  }

  private interface Statements<R> {
    R run(Connection c) throws SQLException;
  }

  private <R> R autocommit(String what, Statements<R> statements) {
    ensureSchema();
    Connection c = connect(what);
    try {
      int networkTimeout = c.getNetworkTimeout();
      Jdbc.prepare(c, isolation, callTimeout);
      R result = statements.run(c);
      c.setNetworkTimeout(Jdbc.DIRECT, networkTimeout);
      return result;
    } catch (SQLException e) {
      throw Jdbc.failed(what + " (run table " + names + ")", e);
    } finally {
      close(c);
    }
  }

  private Connection connect(String what) {
    try {
      return dataSource.getConnection();
    } catch (SQLException e) {
      throw Jdbc.failed(what + ": getting a connection", e, "nothing was done");
    }
  }

  /**
   * From here to the commit the transaction may hold the job's fence row: a runner paused now
   * (SIGSTOP, a frozen VM) would block every successor. The server ends a session idle in a
   * transaction for longer than the call timeout, which rolls it back and frees the row. The same
   * statement makes the commit durable ({@link Jdbc#DURABLE}): a completed run must stay recorded.
   */
  private void cutOffIfPaused(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(cutOffSql)) {
      ps.setString(1, Math.max(1, callTimeout.toMillis()) + "ms");
      Jdbc.executeServerBound(ps);
    }
  }

  private int socketTimeoutMillis() {
    return (int) Math.min(Integer.MAX_VALUE, callTimeout.plus(Jdbc.NETWORK_GRACE).toMillis());
  }

  private static void endTransaction(Connection c, int networkTimeout) {
    try {
      c.setAutoCommit(true);
      c.setNetworkTimeout(Jdbc.DIRECT, networkTimeout);
    } catch (SQLException e) {
      // committed; a pool discards a broken connection
    }
  }

  private Optional<RunRecord> completion(Connection c, String job, String run)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(completionSql)) {
      ps.setString(1, job);
      ps.setString(2, run);
      return records(ps).stream().findFirst();
    }
  }

  private RunRecord insertStarted(Connection c, String job, String run, long token,
      HolderId holder) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(insertSql)) {
      ps.setString(1, job);
      ps.setString(2, run);
      ps.setLong(3, token);
      ps.setString(4, holder.value());
      return records(ps).get(0);
    }
  }

  private Optional<RunRecord> finish(Connection c, RunRecord attempt, RunRecord.Status status,
      @Nullable String failure) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(finishSql)) {
      ps.setString(1, status.name());
      ps.setString(2, failure);
      ps.setLong(3, attempt.attempt());
      ps.setString(4, attempt.job());
      return records(ps).stream().findFirst();
    }
  }

  private static List<RunRecord> records(PreparedStatement ps) throws SQLException {
    List<RunRecord> out = new ArrayList<>();
    try (ResultSet rs = Jdbc.queryServerBound(ps)) {
      while (rs.next()) {
        OffsetDateTime finished = rs.getObject("finished_at", OffsetDateTime.class);
        out.add(new RunRecord(rs.getString("job"), rs.getString("run"), rs.getLong("attempt"),
            rs.getLong("token"), new HolderId(rs.getString("holder")),
            rs.getObject("started_at", OffsetDateTime.class).toInstant(),
            finished == null ? null : finished.toInstant(),
            RunRecord.Status.valueOf(rs.getString("status")), rs.getString("failure")));
      }
    }
    return out;
  }

  private void ensureSchema() {
    if (schema != null) {
      schema.ensure("run table " + names);
      if (!fenceReady) {
        // the fence creates its table on first use from a connection of its own: do it now, not
        // while this ledger holds a connection (a pool of one would wait on itself)
        fence.highestToken(RunKeys.LEASE_PREFIX);
        fenceReady = true;
      }
    }
  }


  private static void close(Connection c) {
    try {
      c.close();
    } catch (SQLException e) {
      // the transaction has ended, or ends with the session
    }
  }

  @Override
  public String toString() {
    return "JdbcRunLedger[" + names + "]";
  }

  /** Configures a {@link JdbcRunLedger}; setters validate at once. */
  public static final class Builder {
    private final DataSource dataSource;
    private SqlNames names = parseTable(DEFAULT_TABLE);
    private String fenceTable = JdbcFence.DEFAULT_TABLE;
    private Duration callTimeout = PostgresLeaseStore.DEFAULT_CALL_TIMEOUT;
    private boolean createTable = true;
    private Runnable beforeCommit = () -> {};

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** For tests: runs between the final check and the commit of a completion. */
    Builder beforeCommit(Runnable hook) {
      this.beforeCommit = Objects.requireNonNull(hook);
      return this;
    }

    /**
     * The attempts table, default {@value JdbcRunLedger#DEFAULT_TABLE}: a lower-case identifier
     * ({@code [a-z_][a-z0-9_]*}) of at most 53 characters (its index names add a suffix),
     * optionally {@code schema.table}.
     */
    public Builder table(String table) {
      this.names = parseTable(table);
      return this;
    }

    /** The {@link JdbcFence} table holding the jobs' fences, default {@value JdbcFence#DEFAULT_TABLE}. */
    public Builder fenceTable(String table) {
      JdbcFence.schemaSql(table); // validates
      this.fenceTable = table;
      return this;
    }

    /**
     * How long each of the ledger's own statements may run, including waiting for a row lock,
     * default 5 s, at most one hour; also how long a runner paused in its final check may hold the
     * job's fence row. The work is not bounded.
     */
    public Builder callTimeout(Duration callTimeout) {
      LeaseArguments.requireTimeout("callTimeout", callTimeout, MAX_CALL_TIMEOUT);
      this.callTimeout = callTimeout;
      return this;
    }

    /** Whether the ledger creates its tables when missing, on first use (default true). */
    public Builder createTable(boolean createTable) {
      this.createTable = createTable;
      return this;
    }

    /** The ledger. */
    public JdbcRunLedger build() {
      return new JdbcRunLedger(this);
    }
  }
}
