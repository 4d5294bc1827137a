package dev.leases.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates missing relations once per process, safely when several processes start at once: the
 * checks and {@code CREATE}s run in one transaction under a transaction-scoped advisory lock keyed
 * by the table name, so concurrent creators take turns. A creator that does not take our lock (a
 * person, an older version) can still race us; the resulting duplicate error is retried once.
 * Existing relations are never altered, and {@code CREATE} is not even attempted for them (it
 * needs privileges that a user of an existing table may lack).
 */
final class SchemaCreator {

  private static final Logger log = LoggerFactory.getLogger(SchemaCreator.class);

  /** First key of the advisory lock that serialises our DDL ("LEAS"). */
  private static final int DDL_LOCK_CLASS = 0x4C454153;

  /** A relation (quoted, possibly schema-qualified) and the DDL that creates it. */
  record Relation(String quotedName, String ddl) {}

  private final DataSource dataSource;
  private final Duration timeout;
  private final String lockKey;
  private final List<Relation> relations;
  private final SqlNames names;
  private final Object lock = new Object();
  private volatile boolean done;

  /**
   * @param names the relations' table name: their schema (when qualified) is where they are
   *     created, and where a refusal is diagnosed
   * @param relations in creation order
   */
  SchemaCreator(DataSource dataSource, Duration timeout, SqlNames names, List<Relation> relations) {
    this.dataSource = dataSource;
    this.timeout = timeout;
    this.lockKey = names.qualified();
    this.relations = List.copyOf(relations);
    this.names = names;
  }

  /** Creates what is missing, once; until it succeeds, every call tries again. */
  void ensure(String what) {
    if (done) {
      return;
    }
    synchronized (lock) {
      if (done) {
        return;
      }
      try {
        create(what);
      } catch (SQLException first) {
        if (!isDuplicate(first)) {
          throw Jdbc.failed("creating " + what, first);
        }
        try {
          create(what);
        } catch (SQLException e) {
          throw Jdbc.failed("creating " + what, e);
        }
      }
      done = true;
    }
  }

  private void create(String what) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      Jdbc.prepare(c, PoolIsolation.UNKNOWN, timeout);
      c.setAutoCommit(false);
      boolean creating = false;
      try {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(?, ?), " + Jdbc.DURABLE)) {
          Jdbc.bound(ps, timeout);
          ps.setInt(1, DDL_LOCK_CLASS);
          ps.setInt(2, lockKey.hashCode());
          ps.execute();
        }
        for (Relation r : relations) {
          if (missing(c, r)) {
            creating = true;
            try (Statement s = c.createStatement()) {
              Jdbc.bound(s, timeout);
              s.execute(r.ddl());
            }
            log.info("created {}", r.quotedName());
          }
        }
        c.commit();
        c.setAutoCommit(true);
      } catch (SQLException | RuntimeException e) {
        try {
          c.rollback();
          c.setAutoCommit(true);
        } catch (SQLException suppressed) {
          e.addSuppressed(suppressed);
        }
        if (e instanceof SQLException s) {
          Optional<PostgresPermissionException> hidden = Privileges.hiddenBySchema(
              (creating ? "creating " : "looking up ") + what, s, c, names, timeout);
          if (hidden.isPresent()) {
            throw hidden.get();
          }
          if (Privileges.NO_SCHEMA_TO_CREATE_IN.equals(s.getSQLState())) {
            throw new IllegalStateException("creating " + what + " failed: no schema on the"
                + " search path of this connection's role exists and may hold it (SQLState "
                + s.getSQLState() + ": " + s.getMessage() + "); nothing was created. Name the"
                + " table as schema.table, set the role's search_path, or have an administrator"
                + " create the relations ahead of time from schemaSql()", s);
          }
        }
        if (e instanceof SQLException s && Privileges.denied(s)) {
          // looking a relation up needs USAGE on its schema; creating one needs CREATE there too
          List<Privileges.On> needs = creating
              ? Privileges.onSchema(names, "USAGE", "CREATE") : Privileges.onSchema(names, "USAGE");
          throw Privileges.refused((creating ? "creating " : "looking up ") + what, s,
              "nothing was created. Rather than granting DDL rights, an administrator can create"
                  + " the relations ahead of time from schemaSql() and grant only grantsSql()",
              c, needs, timeout);
        }
        throw e;
      }
    }
  }

  private boolean missing(Connection c, Relation r) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NULL")) {
      Jdbc.bound(ps, timeout);
      ps.setString(1, r.quotedName());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  private static boolean isDuplicate(SQLException e) {
    String state = e.getSQLState();
    // unique_violation (on the catalogs), duplicate_table, duplicate_object
    return "23505".equals(state) || "42P07".equals(state) || "42710".equals(state);
  }
}
