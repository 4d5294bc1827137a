package dev.leases.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStoreFactory;
import dev.leases.spi.SecretSetting;
import com.zaxxer.hikari.util.Credentials;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Opens a {@link PostgresLeaseStore} with its own small HikariCP pool (closed with the store), so
 * that another process can open a client from plain settings:
 *
 * <ul>
 *   <li>{@code jdbcUrl} (required): {@code jdbc:postgresql://host:port/db}, optionally with
 *       {@code ?user=...&password=...}
 *   <li>{@code username} (optional)
 *   <li>the password, at most one of (optional; a password also in {@code jdbcUrl} is refused):
 *       <ul>
 *         <li>{@code passwordFile}: a file holding it (one trailing line break is dropped), read
 *             again for every new connection, so that a rotated secret (a mounted Kubernetes or
 *             Vault file) is picked up without a restart;
 *         <li>{@code passwordEnv}: the name of an environment variable holding it, read once when
 *             the store is opened;
 *         <li>{@code password}: the password itself (it then sits in the settings map).
 *       </ul>
 *       The store never logs a password or puts one in an exception message.
 *   <li>{@code createTable} (optional, {@code true} or {@code false}, default true): see
 *       {@link PostgresLeaseStore.Builder#createTable}; {@code false} for a role without DDL rights
 *       whose relations an administrator created from {@link PostgresLeaseStore#schemaSql} (with a
 *       role of {@link PostgresLeaseStore#grantsSql}, true also works: it only looks them up).
 *   <li>{@code table} (optional, default {@value PostgresLeaseStore#DEFAULT_TABLE}; see
 *       {@link PostgresLeaseStore.Builder#table})
 *   <li>{@code callTimeoutMillis} (optional, default 5000): the statement timeout, set as the
 *       pool's sessions' {@code statement_timeout} (so no client timer is armed per statement; behind
 *       a transaction-mode pooler such as PgBouncer, where session settings do not stick, the
 *       socket read timeout of this plus one second still bounds every call), also used as the
 *       pool's connection timeout (at least 250 ms, HikariCP's minimum)
 * </ul>
 *
 * The pool's sessions raise {@code synchronous_commit} from {@code off} to {@code on} when they
 * connect (every write of the store is durable anyway; this saves each write raising it for its
 * own transaction). Unknown keys are refused, so that a misspelt setting is not silently ignored. The pool does not
 * connect until the first call, so opening succeeds while the database is down; calls then throw
 * {@link dev.leases.LeaseStoreUnavailableException}. Requires HikariCP on the class path.
 */
public final class PostgresLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: the JDBC URL (required). */
  public static final String JDBC_URL = "jdbcUrl";
  /** Setting: the user name. */
  public static final String USERNAME = "username";
  /** Setting: the password itself (prefer a file or a variable). */
  public static final String PASSWORD = "password";
  /** Setting: a file holding the password, read for every new connection. */
  public static final String PASSWORD_FILE = "passwordFile";
  /** Setting: an environment variable holding the password. */
  public static final String PASSWORD_ENV = "passwordEnv";
  /** Setting: the lease table. */
  public static final String TABLE = "table";
  /** Setting: the call timeout in milliseconds. */
  public static final String CALL_TIMEOUT_MILLIS = "callTimeoutMillis";
  /** Setting: whether missing tables are created. */
  public static final String CREATE_TABLE = "createTable";

  private static final Set<String> KNOWN = Set.of(JDBC_URL, USERNAME, PASSWORD, PASSWORD_FILE,
      PASSWORD_ENV, TABLE, CALL_TIMEOUT_MILLIS, CREATE_TABLE);
  private static final Pattern URL_PASSWORD = Pattern.compile("[?&;]password=", Pattern.CASE_INSENSITIVE);
  private static final int POOL_SIZE = 4;
  private static final long HIKARI_MIN_TIMEOUT_MILLIS = 250;

  private final UnaryOperator<@Nullable String> environment;

  /** A factory; it keeps no state. */
  public PostgresLeaseStoreFactory() {
    this(System::getenv);
  }

  /** HikariCP is an optional dependency of lease-postgres: only this factory needs it. */
  private static void requireHikari() {
    try {
      Class.forName("com.zaxxer.hikari.HikariDataSource", false,
          PostgresLeaseStoreFactory.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      throw new IllegalStateException("PostgresLeaseStoreFactory builds a HikariCP pool, and"
          + " HikariCP is not on the class path: add the dependency com.zaxxer:HikariCP (its"
          + " version is managed by leases-bom), or build the store from your own DataSource with"
          + " PostgresLeaseStore.builder(dataSource)");
    }
  }

  /** With another environment than the process's, for tests. */
  PostgresLeaseStoreFactory(UnaryOperator<@Nullable String> environment) {
    this.environment = environment;
  }

  @Override
  public PostgresLeaseStore open(Map<String, String> settings) {
    requireHikari();
    Set<String> unknown = new TreeSet<>(settings.keySet());
    unknown.removeAll(KNOWN);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown PostgreSQL lease store settings " + unknown
          + "; the known ones are " + new TreeSet<>(KNOWN));
    }
    String url = LeaseStoreFactory.require(settings, JDBC_URL);
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException("setting '" + JDBC_URL + "' must be a PostgreSQL JDBC URL"
          + " starting with jdbc:postgresql:, e.g. jdbc:postgresql://127.0.0.1:5432/postgres");
    }
    Duration callTimeout = PostgresLeaseStore.DEFAULT_CALL_TIMEOUT;
    String timeout = settings.get(CALL_TIMEOUT_MILLIS);
    if (timeout != null) {
      try {
        callTimeout = Duration.ofMillis(Long.parseLong(timeout.trim()));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MILLIS
            + "' must be a whole number of milliseconds, got '" + timeout + "'");
      }
    }
    // Validate everything before a pool exists, so a bad setting leaks nothing.
    PostgresLeaseStore.Builder builder = new PostgresLeaseStore.Builder(null).callTimeout(callTimeout);
    String table = settings.get(TABLE);
    if (table != null) {
      builder.table(table);
    }
    String create = settings.get(CREATE_TABLE);
    if (create != null) {
      if (!create.trim().equalsIgnoreCase("true") && !create.trim().equalsIgnoreCase("false")) {
        throw new IllegalArgumentException("setting '" + CREATE_TABLE + "' must be true or false,"
            + " got '" + create + "'");
      }
      builder.createTable(Boolean.parseBoolean(create.trim()));
    }
    Supplier<String> password = password(settings, url);

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    if (settings.get(USERNAME) != null) {
      config.setUsername(settings.get(USERNAME));
    }
    if (password != null) {
      String username = settings.get(USERNAME);
      // asked for every new connection (HikariCP's provider), so a rotated file is picked up
      config.setCredentialsProvider(() -> Credentials.of(username, password.get()));
    }
    long poolTimeout = Math.max(HIKARI_MIN_TIMEOUT_MILLIS, callTimeout.toMillis());
    config.setConnectionTimeout(poolTimeout);
    config.setValidationTimeout(HIKARI_MIN_TIMEOUT_MILLIS);
    config.setMaximumPoolSize(POOL_SIZE);
    config.setMinimumIdle(1);
    config.setAutoCommit(true);
    config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    config.setInitializationFailTimeout(-1);
    config.setPoolName("leases-" + (table == null ? PostgresLeaseStore.DEFAULT_TABLE : table));
    config.addDataSourceProperty("tcpKeepAlive", "true");
    config.addDataSourceProperty("ApplicationName", "leases");
    // the server cancels any statement after the call timeout, so the store need not arm a client
    // timer for each (this pool is the library's own: nobody else's statements get the limit); and
    // commits are durable for the whole session, so no write raises synchronous_commit itself
    config.setConnectionInitSql("SELECT set_config('statement_timeout', '" + callTimeout.toMillis()
        + "', false), " + Jdbc.DURABLE_SESSION);
    HikariDataSource pool = new HikariDataSource(config);
    return builder.poolBoundsStatements().dataSource(pool).closeWithStore(pool).build();
  }

  /**
   * Where the password comes from: at most one of the three settings, and not with a password in
   * the URL (the driver would silently prefer the URL's). Null when none is set. Messages name
   * settings, files and variables, never a password.
   */
  private @Nullable Supplier<String> password(Map<String, String> settings, String url) {
    String given = SecretSetting.requireAtMostOne(settings, "the PostgreSQL password", PASSWORD,
        PASSWORD_FILE, PASSWORD_ENV);
    if (given != null && URL_PASSWORD.matcher(url).find()) {
      throw new IllegalArgumentException("setting '" + JDBC_URL + "' carries a password (its"
          + " password parameter), and '" + given + "' gives another: give the password one way"
          + " (prefer '" + PASSWORD_FILE + "' and a URL without password=)");
    }
    if (PASSWORD.equals(given)) {
      String inline = settings.get(PASSWORD);
      return () -> inline;
    }
    if (PASSWORD_ENV.equals(given)) {
      String value = SecretSetting.fromEnvironment(PASSWORD_ENV, settings.get(PASSWORD_ENV),
          environment);
      return () -> value;
    }
    if (PASSWORD_FILE.equals(given)) {
      return SecretSetting.rereadingFile(PASSWORD_FILE, "password file",
          Path.of(settings.get(PASSWORD_FILE).trim()));
    }
    return null;
  }
}
