package dev.leases.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Whether a pool hands out its connections in autocommit at READ COMMITTED, so that a call need
 * not set the level first: {@code setTransactionIsolation} is a round trip of its own ({@code SET
 * SESSION CHARACTERISTICS}), which doubled the round trips of every lease call.
 * <ul>
 *   <li>A HikariCP pool configured for autocommit and READ COMMITTED: yes.
 *   <li>A HikariCP pool in autocommit with no isolation configured (the README's example, Spring
 *       Boot's default pool): HikariCP hands connections out at the level its first connection
 *       reported (the server's default) and puts back any other level a borrower set, so the
 *       level of the first connection a call takes tells; it is read once ({@code SHOW}, one round
 *       trip, on a connection whose reads are already bounded).
 *   <li>Anything else: never assumed; each call sets READ COMMITTED.
 * </ul>
 * A level changed behind the pool's back (plain SQL on a pooled connection) is not seen: racing
 * calls then fail as unavailable (40001) instead of seeing the latest row, never grant twice.
 */
final class PoolIsolation {

  private enum Known { YES, ASK_ONCE, NO }

  /** For connections nobody vouches for: set the level on every call. */
  static final PoolIsolation UNKNOWN = new PoolIsolation(Known.NO);

  private volatile Known known;

  private PoolIsolation(Known known) {
    this.known = known;
  }

  static PoolIsolation of(DataSource dataSource) {
    if (!HikariSupport.isHikari(dataSource)) {
      return UNKNOWN;
    }
    return switch (HikariSupport.isolation(dataSource)) {
      case READ_COMMITTED -> new PoolIsolation(Known.YES);
      case SERVER_DEFAULT -> new PoolIsolation(Known.ASK_ONCE);
      case OTHER -> UNKNOWN;
    };
  }

  /** Whether it is known, without asking, that the pool's connections are at READ COMMITTED. */
  boolean known() {
    return known == Known.YES;
  }

  /**
   * Whether {@code c}, as the pool handed it out, is at READ COMMITTED; the first time for a pool
   * at the server's default level, asks {@code c}.
   */
  boolean readCommitted(Connection c) throws SQLException {
    Known k = known;
    if (k == Known.ASK_ONCE) {
      int level = c.getTransactionIsolation();
      k = level == Connection.TRANSACTION_READ_COMMITTED
          || level == Connection.TRANSACTION_READ_UNCOMMITTED ? Known.YES : Known.NO;
      known = k;
    }
    return k == Known.YES;
  }
}
