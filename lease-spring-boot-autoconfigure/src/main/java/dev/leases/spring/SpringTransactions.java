package dev.leases.spring;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** How the library's JDBC helpers find and join the Spring-managed transaction of a DataSource. */
final class SpringTransactions {

  private SpringTransactions() {}

  /** Whether a Spring transaction is active on this thread. */
  static boolean active() {
    return TransactionSynchronizationManager.isActualTransactionActive();
  }

  /** The holder of {@code dataSource}'s connection in the active transaction, or null. */
  static @Nullable ConnectionHolder holder(DataSource dataSource) {
    return active() ? (ConnectionHolder) TransactionSynchronizationManager.getResource(dataSource)
        : null;
  }

  static IllegalStateException notManaged(DataSource dataSource, String who) {
    return new IllegalStateException(who + " found an active Spring transaction that does not"
        + " manage its DataSource " + dataSource + ": run it under a transaction manager of that"
        + " DataSource (DataSourceTransactionManager or JpaTransactionManager), or outside any"
        + " transaction");
  }

  /**
   * A DataSource whose every connection is the active Spring transaction's connection of
   * {@code target}, seen through {@link #joined}: the library's own commit and autocommit calls
   * become no-ops (Spring commits), its rollback marks the transaction rollback-only.
   */
  static DataSource boundTo(DataSource target, String who) {
    return new DelegatingDataSource(target) {
      @Override
      public Connection getConnection() {
        ConnectionHolder holder = holder(target);
        if (holder == null) {
          throw notManaged(target, who);
        }
        Connection c = DataSourceUtils.getConnection(target);
        return joined(c, holder, target);
      }

      @Override
      public Connection getConnection(String username, String password) {
        return getConnection();
      }
    };
  }

  private static Connection joined(Connection c, ConnectionHolder holder, DataSource ds) {
    InvocationHandler h = (proxy, method, args) -> {
      switch (method.getName()) {
        case "commit":
        case "setAutoCommit":
          return null; // the transaction manager commits
        case "rollback":
          if (args == null) {
            holder.setRollbackOnly(); // the exception on its way out rolls it back
            return null;
          }
          break;
        case "setTransactionIsolation":
          if (c.getTransactionIsolation() != (int) args[0]) {
            throw new IllegalStateException("the Spring transaction runs at isolation level "
                + c.getTransactionIsolation() + "; the leases JDBC helpers need READ COMMITTED ("
                + Connection.TRANSACTION_READ_COMMITTED + "): use"
                + " @Transactional(isolation = Isolation.READ_COMMITTED)");
          }
          return null;
        case "close":
          DataSourceUtils.releaseConnection(c, ds);
          return null;
        default:
          break;
      }
      return invoke(c, method, args);
    };
    return (Connection) Proxy.newProxyInstance(SpringTransactions.class.getClassLoader(),
        new Class<?>[] {Connection.class}, h);
  }

  private static @Nullable Object invoke(Connection c, Method method,
      @Nullable Object @Nullable [] args) throws Throwable {
    try {
      return method.invoke(c, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Marks the active transaction rollback-only, where the holder can carry it. */
  static void rollbackOnly(DataSource dataSource) {
    ConnectionHolder holder = holder(dataSource);
    if (holder != null) {
      holder.setRollbackOnly();
    }
  }

}
