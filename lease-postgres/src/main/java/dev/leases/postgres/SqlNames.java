package dev.leases.postgres;

import dev.leases.LeaseArguments;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A validated table name, optionally schema-qualified, and the names derived from it. Only plain
 * lower-case identifiers are accepted (malformed UTF-16 is refused first, with its own message),
 * so a name can never be SQL syntax, and the names derived
 * from it stay within PostgreSQL's 63-byte identifier limit (longer ones are silently truncated by
 * the server, which would make a {@code LISTEN} miss its {@code NOTIFY}).
 */
final class SqlNames {

  /** PostgreSQL's identifier limit (NAMEDATALEN - 1), in bytes; our identifiers are ASCII. */
  static final int MAX_IDENTIFIER = 63;

  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]*");

  private final @Nullable String schema; // null when unqualified
  private final String table;

  private SqlNames(@Nullable String schema, String table) {
    this.schema = schema;
    this.table = table;
  }

  /**
   * Parses {@code table} or {@code schema.table}.
   *
   * @param what for messages, e.g. "lease table"
   * @param maxTableLength the longest table part allowed (shorter than 63 when a suffix is derived)
   * @param maxTotalLength the longest {@code schema.table} allowed
   */
  static SqlNames parse(String what, String qualified, int maxTableLength, int maxTotalLength) {
    Objects.requireNonNull(qualified, () -> what + " name must not be null");
    LeaseArguments.requireWellFormed(what + " name", qualified);
    String rule = what + " name must be a lower-case identifier matching [a-z_][a-z0-9_]*,"
        + " optionally schema-qualified as schema.table, with a table part of at most "
        + maxTableLength + " characters and at most " + maxTotalLength + " characters in all";
    if (qualified.length() > maxTotalLength) {
      throw new IllegalArgumentException(
          rule + "; got " + qualified.length() + " characters: " + abbreviate(qualified));
    }
    String[] parts = qualified.split("\\.", -1);
    if (parts.length > 2) {
      throw new IllegalArgumentException(rule + "; got " + abbreviate(qualified));
    }
    for (String part : parts) {
      if (!IDENTIFIER.matcher(part).matches()) {
        throw new IllegalArgumentException(rule + "; got " + abbreviate(qualified));
      }
    }
    String table = parts[parts.length - 1];
    @Nullable String schema = parts.length == 2 ? parts[0] : null;
    if (table.length() > maxTableLength) {
      throw new IllegalArgumentException(
          rule + "; the table part '" + table + "' has " + table.length() + " characters");
    }
    if (schema != null && schema.length() > MAX_IDENTIFIER) {
      throw new IllegalArgumentException(
          rule + "; the schema part has " + schema.length() + " characters (limit "
              + MAX_IDENTIFIER + ")");
    }
    return new SqlNames(schema, table);
  }

  /** The table as it appears in SQL, each part double-quoted (so reserved words are fine). */
  String quotedTable() {
    return quoted(table);
  }

  /** A sibling object in the same schema, quoted: {@code "schema"."<table><suffix>"}. */
  String quoted(String name) {
    return schema == null ? quote(name) : quote(schema) + "." + quote(name);
  }

  /** The sibling's plain (unquoted) identifier, for {@code to_regclass} and messages. */
  String plain(String name) {
    return schema == null ? name : schema + "." + name;
  }

  String table() {
    return table;
  }

  /** The schema part, or null when unqualified. */
  @Nullable String schema() {
    return schema;
  }

  /** The schema, quoted; only for a qualified name. */
  String quotedSchema() {
    return quote(schema);
  }

  /** {@code schema.table} or {@code table}, as the user wrote it. */
  String qualified() {
    return plain(table);
  }

  private static String quote(String identifier) {
    return '"' + identifier + '"';
  }

  private static String abbreviate(String s) {
    String shown = s.length() > 80 ? s.substring(0, 80) + "..." : s;
    return "'" + shown.replaceAll("\\p{Cntrl}", "?") + "'";
  }

  @Override
  public String toString() {
    return qualified();
  }
}
