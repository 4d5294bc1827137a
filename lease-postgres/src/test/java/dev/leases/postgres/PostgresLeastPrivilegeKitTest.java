package dev.leases.postgres;

import java.util.Map;
import org.junit.jupiter.api.AfterAll;

/**
 * The whole kit as a role with exactly {@link PostgresLeaseStore#grantsSql} (and
 * {@link JdbcFence#grantsSql}) on tables an administrator created from {@code schemaSql}, with
 * {@code createTable=false}: no DDL right, no DELETE, nothing else.
 */
class PostgresLeastPrivilegeKitTest extends PostgresLeaseStoreTckTest {

  private static LeastPrivilegeSchema db;

  static synchronized LeastPrivilegeSchema db() {
    if (db == null) {
      db = LeastPrivilegeSchema.createOrFail(PostgresServers.url());
    }
    return db;
  }

  @AfterAll
  static void drop() throws Exception {
    if (db != null) {
      db.close();
      db = null;
    }
  }

  @Override
  protected Map<String, String> settings() {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, db().urlAs(db().holder),
        PostgresLeaseStoreFactory.TABLE, db().leaseTable,
        PostgresLeaseStoreFactory.CREATE_TABLE, "false");
  }

  @Override
  protected String table() {
    return db().leaseTable;
  }
}
