package dev.leases.postgres;

import com.zaxxer.hikari.HikariCredentialsProvider;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.util.Credentials;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * Everything that touches HikariCP, an optional dependency. Callers check {@link #isHikari} first;
 * this class's other methods are only run when HikariCP is on the class path.
 */
final class HikariSupport {

  private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";

  private HikariSupport() {}

  static boolean isHikari(DataSource dataSource) {
    try {
      Class<?> hikari = Class.forName(HIKARI, false, HikariSupport.class.getClassLoader());
      return hikari.isInstance(dataSource);
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** The level at which a HikariCP pool hands out its connections, as far as its settings tell. */
  enum Isolation {
    /** Autocommit and READ COMMITTED, configured. */
    READ_COMMITTED,
    /** Autocommit and no level configured: the level the pool's first connection reported. */
    SERVER_DEFAULT,
    /** Another level configured, or not autocommit. */
    OTHER
  }

  /** Which {@link Isolation} the pool's settings promise; the pool puts back the level on return. */
  static Isolation isolation(DataSource dataSource) {
    HikariDataSource h = (HikariDataSource) dataSource;
    String level = h.getTransactionIsolation();
    if (!h.isAutoCommit()) {
      return Isolation.OTHER;
    }
    if (level == null) {
      return Isolation.SERVER_DEFAULT;
    }
    return level.equals("TRANSACTION_READ_COMMITTED")
        || level.equals(String.valueOf(Connection.TRANSACTION_READ_COMMITTED))
        ? Isolation.READ_COMMITTED : Isolation.OTHER;
  }

  /**
   * New connections to the pool's database that bypass the pool, for {@code LISTEN}: from its JDBC
   * URL, user, password and driver properties. Empty when the pool is configured another way (a
   * data source class or object instead of a URL). Connecting and logging in are bounded: pgjdbc's
   * {@code connectTimeout} and {@code socketTimeout} are set unless the pool sets them (to other
   * than 0, which means none).
   */
  static Optional<Supplier<Connection>> directConnections(
      DataSource dataSource, Duration callTimeout) {
    HikariDataSource h = (HikariDataSource) dataSource;
    String url = h.getJdbcUrl();
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      return Optional.empty();
    }
    Properties base = new Properties();
    base.putAll(h.getDataSourceProperties());
    bounded(base, "connectTimeout", ReleaseHints.CONNECT_TIMEOUT_SECONDS);
    bounded(base, "socketTimeout", ReleaseHints.loginTimeoutSeconds(callTimeout));
    base.putIfAbsent("tcpKeepAlive", "true");
    base.putIfAbsent("ApplicationName", "leases-listen");
    String shown = Jdbc.withoutSecrets(url);
    return Optional.of(() -> {
      Properties props = new Properties();
      props.putAll(base);
      // the pool's credentials as it would use them for a new connection: a provider's afresh
      HikariCredentialsProvider provider = h.getCredentialsProvider();
      Credentials credentials = provider != null ? provider.getCredentials()
          : h.getCredentials();
      if (credentials != null && credentials.getUsername() != null) {
        props.setProperty("user", credentials.getUsername());
      }
      if (credentials != null && credentials.getPassword() != null) {
        props.setProperty("password", credentials.getPassword());
      }
      try {
        return DriverManager.getConnection(url, props);
      } catch (SQLException e) {
        throw new IllegalStateException("cannot open the LISTEN connection to " + shown
            + " (SQLState " + e.getSQLState() + "): " + e.getMessage(), e);
      }
    });
  }

  /** Sets a pgjdbc timeout property (seconds) unless it is set to a bound already. */
  private static void bounded(Properties props, String key, int seconds) {
    Object value = props.get(key);
    if (value == null || String.valueOf(value).trim().equals("0")) {
      props.setProperty(key, Integer.toString(seconds));
    }
  }
}
