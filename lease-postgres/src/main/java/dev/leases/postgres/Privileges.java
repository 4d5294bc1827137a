package dev.leases.postgres;

import dev.leases.LeaseArguments;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The privileges each call of this module needs, in one place: as {@code GRANT} statements for an
 * administrator ({@code grantsSql} of the store, the fence and the ledger), and as the check that
 * names what a role lacks when the server refuses a call with SQLState 42501
 * (insufficient_privilege).
 */
final class Privileges {

  /** SQLState insufficient_privilege. */
  static final String INSUFFICIENT_PRIVILEGE = "42501";
  /** SQLState undefined_table: the table is not on the search path (or does not exist). */
  static final String UNDEFINED_TABLE = "42P01";
  /** SQLState invalid_schema_name: an unqualified CREATE found no schema to create in. */
  static final String NO_SCHEMA_TO_CREATE_IN = "3F000";

  /** PostgreSQL's limit on a role name, in bytes (NAMEDATALEN - 1). */
  private static final int MAX_ROLE = SqlNames.MAX_IDENTIFIER;

  enum Kind { SCHEMA, TABLE, SEQUENCE }

  /**
   * Privileges on one object.
   *
   * @param quoted the object as it appears in SQL
   * @param plain the object as messages show it
   */
  record On(Kind kind, String quoted, String plain, List<String> privileges) {
    On {
      privileges = List.copyOf(privileges);
    }

    String grant(String quotedRole) {
      return "GRANT " + String.join(", ", privileges) + " ON " + kind + " " + quoted + " TO "
          + quotedRole;
    }

    @Override
    public String toString() {
      return String.join(", ", privileges) + " ON " + kind + " " + plain;
    }
  }

  private Privileges() {}

  /**
   * {@code ons}, preceded by USAGE on the schema of a qualified {@code names} (nothing for an
   * unqualified one: its schema is whichever {@code search_path} finds).
   */
  static List<On> withSchema(SqlNames names, On... ons) {
    List<On> all = new ArrayList<>(onSchema(names, "USAGE"));
    all.addAll(List.of(ons));
    return List.copyOf(all);
  }

  /** {@code privileges} on the schema of a qualified {@code names}; nothing if unqualified. */
  static List<On> onSchema(SqlNames names, String... privileges) {
    return names.schema() == null ? List.of()
        : List.of(new On(Kind.SCHEMA, names.quotedSchema(), names.schema(), List.of(privileges)));
  }

  static On table(SqlNames names, String... privileges) {
    return new On(Kind.TABLE, names.quotedTable(), names.qualified(), List.of(privileges));
  }

  static On sequence(SqlNames names, String suffix, String... privileges) {
    return new On(Kind.SEQUENCE, names.quoted(names.table() + suffix),
        names.plain(names.table() + suffix), List.of(privileges));
  }

  /** {@code needs} as one {@code GRANT} per object, to {@code role} (validated and quoted). */
  static List<String> grants(String role, List<On> needs) {
    String quotedRole = quoteRole(role);
    return needs.stream().map(n -> n.grant(quotedRole)).toList();
  }

  /**
   * A role name as PostgreSQL stores it (lower case if it was created unquoted), double-quoted so
   * that any such name is one identifier.
   */
  static String quoteRole(String role) {
    LeaseArguments.requireText("role", role, MAX_ROLE);
    return '"' + role.replace("\"", "\"\"") + '"';
  }

  static boolean denied(SQLException e) {
    return INSUFFICIENT_PRIVILEGE.equals(e.getSQLState());
  }

  /**
   * The refusal of a call that the server denied: which of {@code needs} the connection's role
   * lacks, asked of the server on {@code c} (which must be usable: autocommit, or after a
   * rollback), each query bounded by {@code timeout}. When that cannot be asked (a caller's aborted
   * transaction: pass null) or fails, the message lists everything the call needs instead.
   */
  static PostgresPermissionException refused(String what, SQLException e, String outcome,
      @Nullable Connection c, List<On> needs, Duration timeout) {
    Optional<Diagnosis> d = c == null || needs.isEmpty() ? Optional.empty()
        : diagnose(c, needs, timeout);
    StringBuilder m = new StringBuilder(what).append(": role ")
        .append(d.map(x -> '"' + x.role + '"').orElse("of this connection"))
        .append(" lacks permission (SQLState ").append(e.getSQLState()).append(": ")
        .append(e.getMessage()).append(")");
    if (d.isPresent() && !d.get().missing.isEmpty()) {
      List<On> missing = d.get().missing;
      m.append("; missing: ").append(join(missing)).append(". An administrator can grant them: ")
          .append(String.join("; ", grants(d.get().role, missing)));
    } else if (d.isPresent()) {
      m.append("; the role has every privilege this call needs (").append(join(needs))
          .append("), so something else was refused (row-level security, a revoked function)");
    } else if (!needs.isEmpty()) {
      m.append("; this call needs ").append(join(needs));
    }
    m.append(" (see grantsSql and observerGrantsSql); ").append(outcome);
    return new PostgresPermissionException(m.toString(), e);
  }

  /** A 42501 refusal with no list of needs (DDL, the run ledger's own steps). */
  static PostgresPermissionException refused(String what, SQLException e, String outcome) {
    return refused(what, e, outcome, null, List.of(), Duration.ZERO);
  }

  private record Diagnosis(String role, List<On> missing) {}

  /**
   * Asks the server which privileges the session's role lacks. Schemas first: naming a table in a
   * schema the role may not use is itself refused.
   */
  private static Optional<Diagnosis> diagnose(Connection c, List<On> needs, Duration timeout) {
    try {
      String role = null;
      List<On> missing = new ArrayList<>();
      for (boolean schemas : new boolean[] {true, false}) {
        for (On on : needs) {
          if ((on.kind == Kind.SCHEMA) != schemas) {
            continue;
          }
          List<String> lacking = new ArrayList<>();
          for (String privilege : on.privileges) {
            try (PreparedStatement ps = c.prepareStatement("SELECT current_user, "
                + switch (on.kind) {
                  case SCHEMA -> "has_schema_privilege(?, ?)";
                  case TABLE -> "has_table_privilege(?, ?)";
                  case SEQUENCE -> "has_sequence_privilege(?, ?)";
                })) {
              Jdbc.bound(ps, timeout);
              ps.setString(1, on.kind == Kind.SCHEMA ? on.plain : on.quoted);
              ps.setString(2, privilege);
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                role = rs.getString(1);
                if (!rs.getBoolean(2)) {
                  lacking.add(privilege);
                }
              }
            }
          }
          if (!lacking.isEmpty()) {
            missing.add(new On(on.kind, on.quoted, on.plain, lacking));
          }
        }
        if (!missing.isEmpty()) {
          break; // without the schema, the server would refuse to look at its tables
        }
      }
      return role == null ? Optional.empty() : Optional.of(new Diagnosis(role, missing));
    } catch (SQLException | RuntimeException e) {
      return Optional.empty(); // e.g. the table does not exist: list every need instead
    }
  }

  /** SQLStates of a table the search path did not find, or no schema there to create it in. */
  private static final List<String> NOT_ON_SEARCH_PATH =
      List.of(UNDEFINED_TABLE, NO_SCHEMA_TO_CREATE_IN);

  /**
   * For a table named without its schema that the server did not find (42P01) or had no schema
   * to create in (3F000): the refusal to report when a table of that name exists in schemas the
   * session's role may not use, which its search path silently skips (asked of the server on
   * {@code c}, usable: autocommit or after a rollback, bounded by {@code timeout}). Empty for a
   * qualified name, another SQLState, no such schema, or when that cannot be asked.
   */
  static Optional<PostgresPermissionException> hiddenBySchema(String what, SQLException e,
      Connection c, SqlNames names, Duration timeout) {
    if (names.schema() != null || !NOT_ON_SEARCH_PATH.contains(e.getSQLState())) {
      return Optional.empty();
    }
    List<String> schemas = new ArrayList<>();
    String role = null;
    try (PreparedStatement ps = c.prepareStatement("SELECT n.nspname, current_user"
        + " FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace"
        + " WHERE r.relname = ? AND r.relkind IN ('r', 'p')"
        + " AND NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE') ORDER BY 1 LIMIT 10")) {
      Jdbc.bound(ps, timeout);
      ps.setString(1, names.table());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          schemas.add(rs.getString(1));
          role = rs.getString(2);
        }
      }
    } catch (SQLException | RuntimeException ignored) {
      return Optional.empty();
    }
    if (role == null) {
      return Optional.empty();
    }
    String quotedRole = quoteRole(role);
    List<String> fixes = schemas.stream()
        .map(sc -> "GRANT USAGE ON SCHEMA \"" + sc.replace("\"", "\"\"") + "\" TO " + quotedRole
            + " (or name the table " + sc + "." + names.table() + ")")
        .toList();
    return Optional.of(new PostgresPermissionException(what + ": table " + names.table()
        + " is named without its schema and role \"" + role + "\" finds none on its search path"
        + " (SQLState " + e.getSQLState() + ": " + e.getMessage() + "), but a table of that name"
        + " exists in schema " + String.join(", schema ", schemas) + ", which the role may not use"
        + " (no USAGE), so the search path skips it. If that is the lease table, an administrator"
        + " can grant: " + String.join("; ", fixes), e));
  }

  private static String join(List<On> ons) {
    return String.join("; ", ons.stream().map(On::toString).toList());
  }
}
