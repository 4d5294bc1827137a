package dev.leases.postgres;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A schema of its own with the lease and fence tables created by the administrator from
 * {@code schemaSql}, and two login roles that have exactly the documented grants on it: a holder
 * ({@link PostgresLeaseStore#grantsSql} + {@link JdbcFence#grantsSql}) and an observer (the
 * {@code observerGrantsSql} of both). Neither may create anything in the schema. Dropped with
 * everything in it by {@link #close()}.
 */
final class LeastPrivilegeSchema implements AutoCloseable {

  final String adminUrl;
  final String schema;
  final String leaseTable;
  final String fenceTable;
  final String holder;
  final String observer;
  final String password;
  private final List<String> roles = new ArrayList<>();

  private LeastPrivilegeSchema(String adminUrl) {
    this.adminUrl = adminUrl;
    String id = random();
    this.schema = "lp_" + id;
    this.leaseTable = schema + ".leases";
    this.fenceTable = schema + ".lease_fences";
    this.holder = "lp_holder_" + id;
    this.observer = "lp_observer_" + id;
    this.password = "pw-" + random();
  }

  /** Creates the schema, its tables and both roles on the server {@code adminUrl} reaches. */
  static LeastPrivilegeSchema create(String adminUrl) throws SQLException {
    LeastPrivilegeSchema s = new LeastPrivilegeSchema(adminUrl);
    List<String> sql = new ArrayList<>();
    sql.add("CREATE SCHEMA " + s.schema);
    sql.addAll(PostgresLeaseStore.schemaSql(s.leaseTable));
    sql.addAll(JdbcFence.schemaSql(s.fenceTable));
    s.admin(sql);
    s.role(s.holder, concat(PostgresLeaseStore.grantsSql(s.leaseTable, s.holder),
        JdbcFence.grantsSql(s.fenceTable, s.holder)));
    s.role(s.observer, concat(PostgresLeaseStore.observerGrantsSql(s.leaseTable, s.observer),
        JdbcFence.observerGrantsSql(s.fenceTable, s.observer)));
    return s;
  }

  /** {@link #create}, for a kit subclass's lazily created fixture: a failure fails the test. */
  static LeastPrivilegeSchema createOrFail(String adminUrl) {
    try {
      return create(adminUrl);
    } catch (SQLException e) {
      throw new AssertionError("creating the least-privilege schema and roles failed", e);
    }
  }

  /** A login role with the password of this fixture and exactly {@code grants}. */
  void role(String role, List<String> grants) throws SQLException {
    List<String> sql = new ArrayList<>();
    sql.add("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'");
    sql.addAll(grants);
    roles.add(role);
    admin(sql);
  }

  /** The admin URL with {@code role} as its user (and this fixture's password). */
  String urlAs(String role) {
    return userUrl(role) + "&password=" + password;
  }

  /** The admin URL with {@code role} as its user and no password. */
  String userUrl(String role) {
    String url = adminUrl.replaceAll("([?&])(user|password)=[^&]*&?", "$1");
    url = url.endsWith("?") || url.endsWith("&") ? url : url + (url.contains("?") ? "&" : "?");
    return url + "user=" + role;
  }

  void admin(List<String> statements) throws SQLException {
    try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
      for (String s : statements) {
        st.execute(s);
      }
    }
  }

  @Override
  public void close() throws SQLException {
    List<String> sql = new ArrayList<>();
    sql.add("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    for (String r : roles) {
      sql.add("DROP OWNED BY " + r);
      sql.add("DROP ROLE " + r);
    }
    admin(sql);
  }

  static String random() {
    byte[] b = new byte[5];
    ThreadLocalRandom.current().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
