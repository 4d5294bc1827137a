package dev.leases.postgres;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
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

  /** True when the pool itself hands out autocommit READ COMMITTED connections (and resets them). */
  static boolean readCommittedAutocommit(DataSource dataSource) {
    HikariDataSource h = (HikariDataSource) dataSource;
    String level = h.getTransactionIsolation();
    return h.isAutoCommit() && level != null
        && (level.equals("TRANSACTION_READ_COMMITTED")
            || level.equals(String.valueOf(Connection.TRANSACTION_READ_COMMITTED)));
  }

  /**
   * New connections to the pool's database that bypass the pool, for {@code LISTEN}: from its JDBC
   * URL, user, password and driver properties. Empty when the pool is configured another way (a
   * data source class or object instead of a URL).
   */
  static Optional<Supplier<Connection>> directConnections(DataSource dataSource) {
    HikariDataSource h = (HikariDataSource) dataSource;
    String url = h.getJdbcUrl();
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      return Optional.empty();
    }
    Properties props = new Properties();
    props.putAll(h.getDataSourceProperties());
    if (h.getUsername() != null) {
      props.setProperty("user", h.getUsername());
    }
    if (h.getPassword() != null) {
      props.setProperty("password", h.getPassword());
    }
    props.putIfAbsent("connectTimeout", "5");
    props.putIfAbsent("tcpKeepAlive", "true");
    props.putIfAbsent("ApplicationName", "leases-listen");
    return Optional.of(() -> {
      try {
        return DriverManager.getConnection(url, props);
      } catch (SQLException e) {
        throw new IllegalStateException("cannot open the LISTEN connection to " + url
            + " (SQLState " + e.getSQLState() + "): " + e.getMessage(), e);
      }
    });
  }
}
