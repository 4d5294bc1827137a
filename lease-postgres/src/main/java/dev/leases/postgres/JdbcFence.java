package dev.leases.postgres;

import dev.leases.FencedOutException;
import dev.leases.LeaseArguments;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Fenced writes to a JDBC resource: a write commits only if its fencing token is at least the
 * highest token any write to the same resource has committed, in the same transaction as the work.
 *
 * <pre>{@code
 * JdbcFence fence = JdbcFence.builder(dataSource).build();
 * fence.write("billing-run", grant.token(), c -> {
 *   try (PreparedStatement ps = c.prepareStatement("INSERT INTO invoices ...")) {
 *     return ps.executeUpdate();
 *   }
 * });
 * }</pre>
 *
 * <p>The fence is a row per resource in a table ({@value #DEFAULT_TABLE} by default: {@code resource
 * text primary key, fence bigint, updated_at timestamptz}). A write first runs {@code INSERT ... ON
 * CONFLICT (resource) DO UPDATE SET fence = excluded.fence ... WHERE fence <= excluded.fence
 * RETURNING fence}. No row back means a higher token has written: the work is not run, nothing is
 * changed, and {@link FencedOutException} is thrown. Otherwise the work runs and everything commits
 * together. Equal tokens pass ({@code <=}), so one leader may write many times under one token.
 * The transaction commits durably: where the session's {@code synchronous_commit} is {@code off},
 * the fence raises it to {@code on} for that transaction only (a crash would otherwise forget an
 * acknowledged fence and let a lower token write again).
 *
 * <p>Contract and races:
 * <ul>
 *   <li>The fence row stays locked from the check to the commit, so writes to one resource are
 *       serialised: a lower token waiting behind a higher one's transaction is rejected once that
 *       commits (READ COMMITTED re-reads the latest row), and proceeds if that one rolls back.
 *       Hence a lower token never lands after a higher one, and a long work blocks other writers
 *       of the same resource (each waits up to the call timeout, then fails as unavailable).
 *   <li>The fence proves that no <em>higher</em> token has written here, not that the writer still
 *       holds its lease: a superseded holder can still write until its successor's first fenced
 *       write. Stop on your local deadline as well.
 *   <li>Only writes that go through this fence, for the same resource name in the same table, are
 *       protected.
 *   <li>Transactions run at READ COMMITTED (set on the fence's own connections unless their pool
 *       vouches for it, required of a caller's).
 *   <li>{@link LeaseStoreUnavailableException} from the commit means the outcome is unknown;
 *       from any earlier step, that nothing was written.
 * </ul>
 *
 * <p>Thread-safe and stateless apart from its DataSource, which it never closes.
 */
public final class JdbcFence {

  /** The fence table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "lease_fences";

  /**
   * Longest accepted resource name. Resource names are checked as lease names are: not blank, no
   * control characters, well-formed UTF-16 (an unpaired surrogate would reach the database as
   * {@code ?} and share another resource's fence).
   */
  public static final int MAX_RESOURCE_LENGTH = LeaseArguments.MAX_NAME_LENGTH;

  private static final Duration MAX_CALL_TIMEOUT = Duration.ofHours(1);

  private final DataSource dataSource;
  private final SqlNames names;
  private final Duration callTimeout;
  /** Whether the pool's connections come at READ COMMITTED, so the level need not be set. */
  private final PoolIsolation isolation;
  private final @Nullable SchemaCreator schema;
  private final String advanceSql;
  private final String readSql;

  private JdbcFence(Builder b) {
    this.dataSource = b.dataSource;
    this.isolation = PoolIsolation.of(dataSource);
    this.names = b.names;
    this.callTimeout = b.callTimeout;
    this.schema = !b.createTable ? null : new SchemaCreator(dataSource, callTimeout,
        names, List.of(new SchemaCreator.Relation(names.quotedTable(), ddl(names))));
    String t = names.quotedTable();
    // the first write for a resource inserts, later ones update: both durably (Jdbc.DURABLE)
    // Each statement is bounded on the server (Jdbc.serverBound): it may run inside the caller's
    // transaction, and on a stalled network the driver's query timeout made a call wait 10 s.
    this.advanceSql = Jdbc.serverBound("INSERT INTO " + t + " AS f (resource, fence)"
        + " SELECT ?::text, ?::bigint WHERE " + Jdbc.DURABLE
        + " ON CONFLICT (resource) DO UPDATE"
        + " SET fence = excluded.fence, updated_at = clock_timestamp()"
        + " WHERE f.fence <= excluded.fence AND " + Jdbc.DURABLE
        + " RETURNING fence", callTimeout);
    this.readSql = Jdbc.serverBound("SELECT fence FROM " + t + " WHERE resource = ?", callTimeout);
  }

  /** Starts configuring a fence whose table lives in {@code dataSource}'s database. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The DDL the fence runs when {@link Builder#createTable} is on (the default), for schemas
   * managed by hand or by a migration tool.
   */
  public static List<String> schemaSql(String table) {
    return List.of(ddl(parseTable(table)));
  }

  /**
   * The least a role needs for {@link #write} on fence table {@code table}, as {@code GRANT}
   * statements an administrator runs after {@link #schemaSql}: {@code USAGE} on a qualified
   * table's schema and {@code SELECT, INSERT, UPDATE} on the table (the upsert reads the row it
   * raises); no DDL (see {@link Builder#createTable}). For {@code billing.lease_fences}:
   *
   * <pre>
   * GRANT USAGE ON SCHEMA "billing" TO "billing_app"
   * GRANT SELECT, INSERT, UPDATE ON TABLE "billing"."lease_fences" TO "billing_app"
   * </pre>
   *
   * The work's own tables need their own grants. A refused call throws
   * {@link PostgresPermissionException} naming what is missing.
   *
   * @param role as for {@link PostgresLeaseStore#grantsSql}
   */
  public static List<String> grantsSql(String table, String role) {
    return Privileges.grants(role, writeNeeds(parseTable(table)));
  }

  /** The least a role needs for {@link #highestToken}: schema {@code USAGE}, {@code SELECT}. */
  public static List<String> observerGrantsSql(String table, String role) {
    return Privileges.grants(role, readNeeds(parseTable(table)));
  }

  static List<Privileges.On> writeNeeds(SqlNames n) {
    return Privileges.withSchema(n, Privileges.table(n, "SELECT", "INSERT", "UPDATE"));
  }

  private static List<Privileges.On> readNeeds(SqlNames n) {
    return Privileges.withSchema(n, Privileges.table(n, "SELECT"));
  }

  private static String ddl(SqlNames n) {
    return "CREATE TABLE IF NOT EXISTS " + n.quotedTable() + " ("
        + "resource text PRIMARY KEY, "
        + "fence bigint NOT NULL CHECK (fence > 0), "
        + "updated_at timestamptz NOT NULL DEFAULT clock_timestamp())";
  }

  private static SqlNames parseTable(String table) {
    return SqlNames.parse(
        "fence table", table, SqlNames.MAX_IDENTIFIER, 2 * SqlNames.MAX_IDENTIFIER + 1);
  }

  /**
   * Runs {@code work} in a new READ COMMITTED transaction on a connection of the fence's
   * DataSource, after checking and advancing the fence, and commits both; any failure rolls both
   * back.
   *
   * @return what {@code work} returned
   * @throws FencedOutException if a higher token has written to {@code resource}; the work was not
   *     run and nothing changed
   * @throws LeaseStoreUnavailableException if the database failed: before the commit, nothing was
   *     written; at the commit, the outcome is unknown
   * @throws LeaseException wrapping an {@link SQLException} thrown by {@code work}; rolled back
   */
  public <T extends @Nullable Object> T write(String resource, long token, JdbcWork<T> work) {
    checkArguments(resource, token, work);
    ensureSchema();
    Connection c;
    try {
      c = dataSource.getConnection();
    } catch (SQLException e) {
      throw Jdbc.failed(what(resource, token) + ": getting a connection", e,
          "nothing was written");
    }
    try {
      return writeInOwnTransaction(c, resource, token, work);
    } finally {
      release(c);
    }
  }

  /**
   * The fence's own steps (setup, check, rollback, commit) run under the network timeout of
   * {@link Jdbc#boundNetwork}; the work runs under the connection's own, as the caller's to bound.
   */
  private <T> T writeInOwnTransaction(Connection c, String resource, long token, JdbcWork<T> work) {
    try (Jdbc.NetworkBound bound = Jdbc.boundNetwork(c, callTimeout)) {
      boolean readCommitted = isolation.readCommitted(c); // asked before anything is changed
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      if (!readCommitted) {
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      }
      c.setAutoCommit(false);
      advanceOrThrow(c, resource, token);
    } catch (SQLException e) {
      Jdbc.rollbackQuietly(c, e, callTimeout);
      if (Privileges.denied(e)) { // rolled back, so the connection can be asked what is missing
        throw Privileges.refused(what(resource, token), e, "nothing was written", c,
            writeNeeds(names), callTimeout);
      }
      throw Jdbc.failed(what(resource, token), e, "nothing was written");
    } catch (RuntimeException e) {
      Jdbc.rollbackQuietly(c, e, callTimeout);
      throw e;
    }
    T result;
    try {
      result = work.run(c);
    } catch (SQLException e) {
      Jdbc.rollbackQuietly(c, e, callTimeout);
      throw new LeaseException(what(resource, token) + ": the work failed (SQLState "
          + e.getSQLState() + ") and was rolled back: " + e.getMessage(), e);
    } catch (RuntimeException | Error e) {
      Jdbc.rollbackQuietly(c, e, callTimeout);
      throw e;
    }
    try (Jdbc.NetworkBound bound = Jdbc.boundNetwork(c, callTimeout)) {
      try {
        c.commit();
      } catch (SQLException e) {
        throw Jdbc.failed(what(resource, token) + ": the commit", e,
            "the outcome is unknown: the work may or may not have been committed");
      }
      c.setAutoCommit(true); // the transaction has ended: leave the connection as we found it
    } catch (SQLException e) {
      // committed; restoring the connection failed, and a pool discards a broken connection
    }
    return result;
  }

  /** Hands the connection back; the outcome is settled, so a failure to close is moot. */
  private static void release(Connection c) {
    try {
      c.close();
    } catch (SQLException e) {
      // nothing to do: the transaction has ended, or ends with the session
    }
  }

  /**
   * Checks and advances the fence inside the caller's open transaction, then runs {@code work} on
   * the same connection; the caller commits or rolls back. The fence row stays locked until then.
   *
   * @throws IllegalStateException if {@code connection} is in autocommit mode (the fence would
   *     commit apart from the work) or not at READ COMMITTED
   * @throws FencedOutException if a higher token has written to {@code resource}; the work was not
   *     run and this call changed nothing, but the fence row stays locked until the transaction
   *     ends: roll back promptly
   * @throws LeaseStoreUnavailableException if the fence statement failed (each socket read of the
   *     fence's part is bounded by the call timeout plus one second; the connection's own network
   *     timeout is put back before the work runs): the transaction is aborted, roll it back
   * @throws LeaseException wrapping an {@link SQLException} thrown by {@code work}: roll back
   */
  public <T extends @Nullable Object> T write(Connection connection, String resource, long token,
      JdbcWork<T> work) {
    Objects.requireNonNull(connection, "connection must not be null");
    checkArguments(resource, token, work);
    advance(connection, resource, token, true);
    try {
      return work.run(connection);
    } catch (SQLException e) {
      throw new LeaseException(what(resource, token) + ": the work failed (SQLState "
          + e.getSQLState() + "); roll back the transaction: " + e.getMessage(), e);
    }
  }

  /**
   * The fence step of {@link #write(Connection, String, long, JdbcWork)} on a connection the caller
   * has already put in a READ COMMITTED transaction ({@link JdbcRunLedger} does), unchecked.
   */
  void advanceInTransaction(Connection connection, String resource, long token) {
    advance(connection, resource, token, false);
  }

  /**
   * Advances the fence in the connection's transaction, every socket read under the fence's network
   * bound: with {@code check}, first that the connection is in a transaction at READ COMMITTED
   * (asking the level is a round trip of its own).
   */
  private void advance(Connection connection, String resource, long token, boolean check) {
    ensureSchema();
    try (Jdbc.NetworkBound bound = Jdbc.boundNetwork(connection, callTimeout)) {
      if (check) {
        if (connection.getAutoCommit()) {
          throw new IllegalStateException("JdbcFence.write(Connection, ...) needs a connection"
              + " inside a transaction, so that the fence and the work commit together; call"
              + " connection.setAutoCommit(false) first, or use write(resource, token, work)");
        }
        Jdbc.requireReadCommitted(connection, "JdbcFence.write(Connection, ...)");
      }
      advanceOrThrow(connection, resource, token);
    } catch (SQLException e) {
      String outcome = "nothing was written; the transaction is aborted: roll it back";
      if (Privileges.denied(e)) {
        throw Privileges.refused(what(resource, token), e, outcome, null, writeNeeds(names),
            callTimeout);
      }
      throw Jdbc.failed(what(resource, token), e, outcome);
    }
  }

  /** The highest token that has written to {@code resource}, empty if none has. */
  public OptionalLong highestToken(String resource) {
    checkResource(resource);
    ensureSchema();
    try (Connection c = dataSource.getConnection()) {
      Jdbc.prepare(c, isolation, callTimeout);
      try {
        return read(c, resource);
      } catch (SQLException e) {
        if (Privileges.denied(e)) {
          throw Privileges.refused("reading the fence of '" + resource + "' in " + names, e,
              Jdbc.REFUSED_OUTCOME, c, readNeeds(names), callTimeout);
        }
        throw e;
      }
    } catch (SQLException e) {
      throw Jdbc.failed("reading the fence of '" + resource + "' in " + names, e,
          "nothing was changed");
    }
  }

  private void advanceOrThrow(Connection c, String resource, long token) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(advanceSql)) {
      ps.setString(1, resource);
      ps.setLong(2, token);
      try (ResultSet rs = Jdbc.queryServerBound(ps)) {
        if (rs.next()) {
          return;
        }
      }
    }
    // Rejected: the row holds a higher token. Nothing changed, but ON CONFLICT has locked the row
    // until the transaction ends.
    long highest = read(c, resource).orElse(-1);
    throw new FencedOutException(resource, token, highest);
  }

  private OptionalLong read(Connection c, String resource) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(readSql)) {
      ps.setString(1, resource);
      try (ResultSet rs = Jdbc.queryServerBound(ps)) {
        return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
      }
    }
  }

  private void ensureSchema() {
    if (schema != null) {
      schema.ensure("fence table " + names);
    }
  }

  private String what(String resource, long token) {
    return "fenced write to '" + resource + "' with token " + token + " (fence table " + names
        + ")";
  }

  private static void checkArguments(String resource, long token, JdbcWork<?> work) {
    checkResource(resource);
    if (token <= 0) {
      throw new IllegalArgumentException(
          "a fencing token is positive (it comes from a LeaseGrant), got " + token);
    }
    Objects.requireNonNull(work, "work must not be null");
  }

  private static void checkResource(String resource) {
    LeaseArguments.requireText("fence resource", resource, MAX_RESOURCE_LENGTH);
  }

  @Override
  public String toString() {
    return "JdbcFence[table=" + names + "]";
  }

  /** Configures a {@link JdbcFence}; setters validate at once. */
  public static final class Builder {
    private final DataSource dataSource;
    private SqlNames names = parseTable(DEFAULT_TABLE);
    private Duration callTimeout = PostgresLeaseStore.DEFAULT_CALL_TIMEOUT;
    private boolean createTable = true;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
    }

    /**
     * The fence table, default {@value JdbcFence#DEFAULT_TABLE}: a lower-case identifier
     * ({@code [a-z_][a-z0-9_]*}) of at most 63 characters, optionally {@code schema.table}.
     */
    public Builder table(String table) {
      this.names = parseTable(table);
      return this;
    }

    /**
     * How long the fence statement may run (including waiting for another writer of the same
     * resource to finish), default 5 s; at most one hour. Every socket read of the fence's own steps
     * (the check, and in {@link JdbcFence#write(String, long, JdbcWork)} the commit or rollback) is
     * bounded by this plus one second. The caller's work is not bounded by the fence.
     */
    public Builder callTimeout(Duration callTimeout) {
      LeaseArguments.requireTimeout("callTimeout", callTimeout, MAX_CALL_TIMEOUT);
      this.callTimeout = callTimeout;
      return this;
    }

    /** Whether the fence creates its table when missing, on first use (default true). */
    public Builder createTable(boolean createTable) {
      this.createTable = createTable;
      return this;
    }

    /** The fence. */
    public JdbcFence build() {
      return new JdbcFence(this);
    }
  }
}
