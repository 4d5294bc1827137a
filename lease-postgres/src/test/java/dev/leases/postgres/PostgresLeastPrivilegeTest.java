package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Roles with exactly the documented grants ({@link LeastPrivilegeSchema}): the holder does
 * everything without DDL rights, the observer reads and is refused every write as lacking
 * permission, a role missing one grant is told which one on what, and a role confined to one
 * schema or table cannot touch another.
 */
class PostgresLeastPrivilegeTest {

  private static final Duration TTL = Duration.ofSeconds(30);
  private static LeastPrivilegeSchema db;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeAll
  static void createSchemaAndRoles() throws Exception {
    db = LeastPrivilegeSchema.create(PostgresServers.url());
  }

  @AfterAll
  static void drop() throws Exception {
    db.close();
  }

  @org.junit.jupiter.api.AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private HikariDataSource pool(String role) {
    HikariDataSource pool = PostgresServers.pool(db.urlAs(role), 2, c -> {});
    open.add(pool);
    return pool;
  }

  private PostgresLeaseStore store(String role, String table) {
    PostgresLeaseStore store = PostgresLeaseStore.builder(pool(role)).table(table).build();
    open.add(store);
    return store;
  }

  private static String name() {
    return "lp-" + LeastPrivilegeSchema.random();
  }

  @Test
  void theHolderRoleDoesEverythingWithTheDocumentedGrantsAndCannotCreateAnything()
      throws Exception {
    try (Connection c = DriverManager.getConnection(db.urlAs(db.holder));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT has_schema_privilege('" + db.schema + "', 'CREATE'),"
            + " has_database_privilege(current_database(), 'CREATE')")) {
      rs.next();
      assertThat(rs.getBoolean(1)).as("CREATE on the schema").isFalse();
      assertThat(rs.getBoolean(2)).as("CREATE on the database").isFalse();
    }
    PostgresLeaseStore store = store(db.holder, db.leaseTable); // createTable on: checks only
    HolderId me = HolderId.generate();
    String name = name();
    AtomicInteger hints = new AtomicInteger();
    store.onRelease(name, hints::incrementAndGet);
    LeaseGrant g = store.acquireOrRenew(name, me, TTL).orElseThrow();
    assertThat(store.acquireOrRenew(name, me, TTL).orElseThrow().token()).isEqualTo(g.token());
    assertThat(store.inspect(name)).isInstanceOf(LeaseState.Held.class);
    assertThat(store.token(name)).hasValue(g.token());
    assertThat(store.token(name())).isPresent(); // no row: the sequence's last value
    assertThat(store.release(name, me)).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> hints.get() > 0);
    String other = name();
    assertThat(List.copyOf(store.acquireOrRenewAll(List.of(name, other), me, TTL).values()))
        .allMatch(a -> a.grant().isPresent(), "granted");
    assertThat(List.copyOf(store.releaseAll(List.of(name, other), me).values())).containsOnly(true);

    JdbcFence fence = JdbcFence.builder(pool(db.holder)).table(db.fenceTable).build();
    Integer written = fence.write("lp-resource-" + name, g.token(), c -> 1);
    assertThat(written).isEqualTo(1);
    assertThat(fence.highestToken("lp-resource-" + name)).hasValue(g.token());
  }

  @Test
  void theObserverReadsAndHearsReleasesButEveryWriteIsRefusedAsLackingPermission() {
    PostgresLeaseStore holder = store(db.holder, db.leaseTable);
    PostgresLeaseStore observer = store(db.observer, db.leaseTable);
    HolderId me = HolderId.generate();
    HolderId them = HolderId.generate();
    String name = name();
    LeaseGrant g = holder.acquireOrRenew(name, me, TTL).orElseThrow();
    assertThat(observer.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
        h -> assertThat(h.holder()).isEqualTo(me));
    assertThat(observer.token(name)).hasValue(g.token());
    assertThat(observer.inspect(name())).isInstanceOf(LeaseState.Free.class);
    assertThat(observer.names(name, 10)).as("SELECT is enough to list").containsExactly(name);

    String table = "ON TABLE " + db.leaseTable;
    String sequence = "USAGE ON SEQUENCE " + db.leaseTable + "_token_seq";
    assertThatThrownBy(() -> observer.acquireOrRenew(name(), them, TTL))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("role \"" + db.observer + "\" lacks permission")
        .hasMessageContaining("missing: INSERT, UPDATE " + table + "; " + sequence)
        .hasMessageContaining("GRANT INSERT, UPDATE " + table.replace(db.leaseTable,
            "\"" + db.schema + "\".\"leases\"") + " TO \"" + db.observer + "\"");
    assertThatThrownBy(() -> observer.acquireOrRenewAll(List.of(name(), name()), them, TTL))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("missing: INSERT, UPDATE " + table + "; " + sequence);
    assertThatThrownBy(() -> observer.release(name, me))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("lacks permission").hasMessageContaining("missing: UPDATE " + table);
    assertThatThrownBy(() -> observer.releaseAll(List.of(name), me))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("missing: UPDATE " + table);
    assertThat(holder.inspect(name)).as("the refused calls changed nothing")
        .isInstanceOfSatisfying(LeaseState.Held.class, h -> assertThat(h.lastToken()).isEqualTo(g.token()));

    AtomicInteger hints = new AtomicInteger();
    observer.onRelease(name, hints::incrementAndGet);
    assertThat(holder.release(name, me)).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> hints.get() > 0);

    JdbcFence fence = JdbcFence.builder(pool(db.observer)).table(db.fenceTable).build();
    assertThat(fence.highestToken("lp-resource-" + name)).isEmpty();
    assertThatThrownBy(() -> fence.write("lp-resource-" + name, g.token(), c -> 1))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("role \"" + db.observer + "\" lacks permission")
        .hasMessageContaining("missing: INSERT, UPDATE ON TABLE " + db.fenceTable);
  }

  @Test
  void aHolderMissingOneGrantIsToldWhichOneOnWhatAndHowToGrantIt() throws Exception {
    String role = "lp_noseq_" + LeastPrivilegeSchema.random();
    List<String> grants = new ArrayList<>(PostgresLeaseStore.grantsSql(db.leaseTable, role));
    grants.removeIf(g -> g.contains("SEQUENCE"));
    db.role(role, grants);
    PostgresLeaseStore store = store(role, db.leaseTable);
    assertThatThrownBy(() -> store.acquireOrRenew(name(), HolderId.generate(), TTL))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("role \"" + role + "\" lacks permission")
        .hasMessageContaining("42501")
        .hasMessageContaining("missing: USAGE ON SEQUENCE " + db.leaseTable + "_token_seq.")
        .hasMessageContaining("GRANT USAGE ON SEQUENCE \"" + db.schema + "\".\"leases_token_seq\""
            + " TO \"" + role + "\"");
  }

  @Test
  void aRoleConfinedToOneSchemaAndTableCannotTouchLeasesInAnother() throws Exception {
    String otherSchema = "lpb_" + LeastPrivilegeSchema.random();
    List<String> ddl = new ArrayList<>(List.of("CREATE SCHEMA " + otherSchema));
    ddl.addAll(PostgresLeaseStore.schemaSql(otherSchema + ".leases"));
    ddl.addAll(PostgresLeaseStore.schemaSql(db.schema + ".other_leases"));
    db.admin(ddl);
    try {
      PostgresLeaseStore elsewhere = store(db.holder, otherSchema + ".leases");
      for (Runnable call : List.<Runnable>of(
          () -> elsewhere.acquireOrRenew(name(), HolderId.generate(), TTL),
          () -> elsewhere.inspect(name()),
          () -> elsewhere.release(name(), HolderId.generate()))) {
        assertThatThrownBy(call::run).isInstanceOf(PostgresPermissionException.class)
            .hasMessageContaining("lacks permission")
            .hasMessageContaining("missing: USAGE ON SCHEMA " + otherSchema + ".");
      }
      PostgresLeaseStore otherTable = store(db.holder, db.schema + ".other_leases");
      assertThatThrownBy(() -> otherTable.acquireOrRenew(name(), HolderId.generate(), TTL))
          .isInstanceOf(PostgresPermissionException.class)
          .hasMessageContaining("missing: SELECT, INSERT, UPDATE ON TABLE " + db.schema
              + ".other_leases; USAGE ON SEQUENCE " + db.schema + ".other_leases_token_seq.");
    } finally {
      db.admin(List.of("DROP SCHEMA " + otherSchema + " CASCADE",
          "DROP TABLE " + db.schema + ".other_leases",
          "DROP SEQUENCE " + db.schema + ".other_leases_token_seq"));
    }
  }

  @Test
  void withoutItsTablesARoleWithoutDdlRightsIsToldToCreateThemAheadFromSchemaSql() {
    PostgresLeaseStore store = store(db.holder, db.schema + ".never_created");
    assertThatThrownBy(() -> store.acquireOrRenew(name(), HolderId.generate(), TTL))
        .isInstanceOf(PostgresPermissionException.class)
        .hasMessageContaining("lacks permission")
        .hasMessageContaining("schemaSql");
  }

  /**
   * An unqualified table name resolves on the role's search path, which leaves out the schemas
   * the role may not use: the listing answered "no names" for a lease table the role could not
   * see (SQLState 42P01), and a store that creates its table failed as "unavailable" (3F000, no
   * schema to create in). Both name the schema and the grant instead.
   */
  @Test
  void anUnqualifiedTableInASchemaTheRoleMayNotUseIsNamedNotListedAsEmpty() throws Exception {
    String role = "lp_nousage_" + LeastPrivilegeSchema.random();
    db.role(role, List.of("GRANT SELECT ON " + db.leaseTable + " TO " + role,
        "ALTER ROLE " + role + " SET search_path = " + db.schema));
    PostgresLeaseStore holder = store(db.holder, db.leaseTable);
    holder.acquireOrRenew(name(), HolderId.generate(), TTL).orElseThrow();
    PostgresLeaseStore creating = store(role, "leases");
    PostgresLeaseStore existing = PostgresLeaseStore.builder(pool(role)).table("leases")
        .createTable(false).build();
    open.add(existing);
    for (PostgresLeaseStore s : List.of(creating, existing)) {
      assertThatThrownBy(() -> s.names("", 10))
          .isInstanceOf(PostgresPermissionException.class)
          .hasMessageContaining("schema " + db.schema)
          .hasMessageContaining("GRANT USAGE ON SCHEMA \"" + db.schema + "\" TO \"" + role + "\"")
          .hasMessageContaining(db.schema + ".leases");
    }
  }

  /** A role whose search path offers no schema to create in is told how to name the table. */
  @Test
  void aTableThatCannotBeCreatedForWantOfASchemaSaysHowToNameIt() throws Exception {
    String role = "lp_nopath_" + LeastPrivilegeSchema.random();
    db.role(role, List.of("ALTER ROLE " + role + " SET search_path = no_such_schema"));
    PostgresLeaseStore store = store(role, "leases_" + LeastPrivilegeSchema.random());
    assertThatThrownBy(() -> store.acquireOrRenew(name(), HolderId.generate(), TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("3F000").hasMessageContaining("schema.table")
        .hasMessageContaining("schemaSql()");
  }
}
