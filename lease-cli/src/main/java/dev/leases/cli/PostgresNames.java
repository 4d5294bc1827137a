package dev.leases.cli;

import dev.leases.LeaseStoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Lists lease names from a {@link dev.leases.postgres.PostgresLeaseStore}'s table with one
 * {@code SELECT} on a connection of the data source, which bounds connect, login and every socket
 * read.
 *
 * <p>A placeholder row (expiry {@code -infinity}, which the store reads as "no row") is not a name.
 */
final class PostgresNames implements NameLister {

  private final DataSource dataSource;
  private final String quotedTable;

  /**
   * @param dataSource gives connections bounded as the store's are (connect, login, socket)
   * @param table as the store's builder accepted it ({@code table} or {@code schema.table}, lower
   *     case identifiers only), so that quoting each part is enough
   */
  PostgresNames(DataSource dataSource, String table) {
    this.dataSource = dataSource;
    StringBuilder q = new StringBuilder();
    for (String part : table.split("\\.")) {
      q.append(q.length() == 0 ? "" : ".").append('"').append(part).append('"');
    }
    this.quotedTable = q.toString();
  }

  @Override
  public List<String> names(String prefix, int limit) {
    String sql = "SELECT name FROM " + quotedTable
        + " WHERE starts_with(name, ?) AND expires_at > '-infinity' ORDER BY name COLLATE \"C\""
        + " LIMIT ?";
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement st = c.prepareStatement(sql)) {
        st.setString(1, prefix);
        st.setInt(2, limit);
        List<String> names = new ArrayList<>();
        try (ResultSet rs = st.executeQuery()) {
          while (rs.next()) {
            names.add(rs.getString(1));
          }
        }
        return names;
      }
    } catch (SQLException e) {
      if ("42P01".equals(e.getSQLState())) {
        throw new CliException(ExitCodes.REFUSED, "table " + quotedTable + " does not exist in"
            + " this database: no lease was ever granted here with this table; check --url and"
            + " --table");
      }
      throw new LeaseStoreUnavailableException("listing names in " + quotedTable + " failed ("
          + "SQLState " + e.getSQLState() + "): " + e.getMessage(), e);
    }
  }
}
