package dev.leases.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Opens a {@link PostgresLeaseStore} with its own small HikariCP pool (closed with the store), so
 * that another process can open a client from plain settings:
 *
 * <ul>
 *   <li>{@code jdbcUrl} (required): {@code jdbc:postgresql://host:port/db}, optionally with
 *       {@code ?user=...&password=...}
 *   <li>{@code username}, {@code password} (optional)
 *   <li>{@code table} (optional, default {@value PostgresLeaseStore#DEFAULT_TABLE}; see
 *       {@link PostgresLeaseStore.Builder#table})
 *   <li>{@code callTimeoutMillis} (optional, default 5000): the statement timeout, also used as the
 *       pool's connection timeout (at least 250 ms, HikariCP's minimum)
 * </ul>
 *
 * Unknown keys are refused, so that a misspelt setting is not silently ignored. The pool does not
 * connect until the first call, so opening succeeds while the database is down; calls then throw
 * {@link dev.leases.LeaseStoreUnavailableException}. Requires HikariCP on the class path.
 */
public final class PostgresLeaseStoreFactory implements LeaseStoreFactory {

  public static final String JDBC_URL = "jdbcUrl";
  public static final String USERNAME = "username";
  public static final String PASSWORD = "password";
  public static final String TABLE = "table";
  public static final String CALL_TIMEOUT_MILLIS = "callTimeoutMillis";

  private static final Set<String> KNOWN =
      Set.of(JDBC_URL, USERNAME, PASSWORD, TABLE, CALL_TIMEOUT_MILLIS);
  private static final int POOL_SIZE = 4;
  private static final long HIKARI_MIN_TIMEOUT_MILLIS = 250;

  public PostgresLeaseStoreFactory() {}

  @Override
  public PostgresLeaseStore open(Map<String, String> settings) {
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

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    if (settings.get(USERNAME) != null) {
      config.setUsername(settings.get(USERNAME));
    }
    if (settings.get(PASSWORD) != null) {
      config.setPassword(settings.get(PASSWORD));
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
    HikariDataSource pool = new HikariDataSource(config);
    return builder.dataSource(pool).closeWithStore(pool).build();
  }
}
