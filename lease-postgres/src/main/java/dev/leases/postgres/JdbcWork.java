package dev.leases.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * The caller's part of a fenced write: JDBC work on the connection whose transaction already
 * carries the fence. Do not commit, roll back or change autocommit on it; {@link JdbcFence} (or the
 * caller that owns the transaction) does.
 *
 * @param <T> what the work returns
 */
@FunctionalInterface
public interface JdbcWork<T extends @Nullable Object> {
  /** Does the work on {@code connection}, inside the fenced transaction; do not commit it. */
  T run(Connection connection) throws SQLException;
}
