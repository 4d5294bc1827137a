package dev.leases.postgres;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;

/**
 * The whole kit over TLS with full verification ({@code sslmode=verify-full} against the test's
 * own authority, {@link TlsPostgres}), as a least-privilege role ({@link LeastPrivilegeSchema})
 * that logs in with a SCRAM password read from a 0600 file ({@code passwordFile}), never in the
 * URL or the settings.
 */
class PostgresTlsKitTest extends PostgresLeaseStoreTckTest {

  private static LeastPrivilegeSchema db;
  private static Path passwordFile;

  static synchronized LeastPrivilegeSchema db() {
    if (db == null) {
      try {
        String adminUrl = TlsPostgres.shared().adminUrl();
        passwordFile = Files.createTempFile("leases-pg-password-", "",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        db = LeastPrivilegeSchema.createOrFail(adminUrl);
        Files.writeString(passwordFile, db.password + "\n");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }
    return db;
  }

  @AfterAll
  static void drop() throws Exception {
    if (db != null) {
      db.close();
      Files.deleteIfExists(passwordFile);
      db = null;
    }
  }

  @Override
  protected Map<String, String> settings() {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, db().userUrl(db().holder),
        PostgresLeaseStoreFactory.PASSWORD_FILE, passwordFile.toString(),
        PostgresLeaseStoreFactory.TABLE, db().leaseTable,
        PostgresLeaseStoreFactory.CREATE_TABLE, "false");
  }

  @Override
  protected String table() {
    return db().leaseTable;
  }

  @Override
  protected String adminUrl() {
    return db().adminUrl;
  }

  /** A crash restart of the TLS server on its data directory and port. */
  @Override
  protected void restartStore() throws Exception {
    RestartablePostgres server = TlsPostgres.shared().server;
    server.crash();
    server.restart();
  }
}
