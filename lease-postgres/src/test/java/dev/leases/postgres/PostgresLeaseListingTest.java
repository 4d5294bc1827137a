package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.LeaseListingTck;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The listing kit against PostgreSQL (each client with its own pool, as separate processes would
 * have), and what the kit cannot know: SQL pattern characters, placeholder rows, a missing table,
 * a statement that cannot finish in time.
 */
class PostgresLeaseListingTest extends LeaseListingTck {

  private static final Duration TTL = Duration.ofMinutes(1);
  private static HikariDataSource pool;
  private static PostgresLeaseStore store;

  @BeforeAll
  static void open() {
    pool = PostgresServers.pool(3);
    store = PostgresLeaseStore.builder(pool).build();
  }

  @AfterAll
  static void close() {
    store.close();
    pool.close();
  }

  @Override
  protected LeaseStore newStore() {
    return new PostgresLeaseStoreFactory().open(
        Map.of(PostgresLeaseStoreFactory.JDBC_URL, PostgresServers.url()));
  }

  private static String prefix() {
    return "pg-list-" + UUID.randomUUID() + "/";
  }

  private static void hold(List<String> names) {
    hold(store, names);
  }

  private static void hold(PostgresLeaseStore s, List<String> names) {
    HolderId h = HolderId.generate();
    for (String n : names) {
      assertThat(s.acquireOrRenew(n, h, TTL)).as(n).isPresent();
    }
  }

  /**
   * {@code LIKE}'s wildcards and its escape character inside the prefix (not only first, as in the
   * kit) are plain text: {@code a_} does not list {@code ab}, {@code a%} does not list {@code abc},
   * {@code a\} does not escape anything.
   */
  @Test
  void likeWildcardsAndEscapesInThePrefixAreText() {
    String p = prefix();
    hold(List.of(p + "ab", p + "abc", p + "a_b", p + "a%c", p + "a\\_", p + "a\\b"));
    assertThat(store.names(p + "a_", 100)).containsExactly(p + "a_b");
    assertThat(store.names(p + "a%", 100)).containsExactly(p + "a%c");
    assertThat(store.names(p + "a\\", 100)).containsExactly(p + "a\\_", p + "a\\b");
    assertThat(store.names(p + "a\\_", 100)).containsExactly(p + "a\\_");
    assertThat(store.names(p + "%", 100)).isEmpty();
    assertThat(store.names(p + "_", 100)).isEmpty();
  }

  /**
   * A placeholder row (what the first acquire of a name inserts before its grant, and may leave
   * committed on its own under pgjdbc's simple query mode) is no name: it was never granted.
   */
  @Test
  void placeholderRowsAreNotNames() throws Exception {
    String p = prefix();
    hold(List.of(p + "granted"));
    try (Connection c = PostgresServers.connect(); var ps = c.prepareStatement(
        "INSERT INTO leases (name, holder, token, expires_at) VALUES (?, NULL, 1, '-infinity')")) {
      ps.setString(1, p + "placeholder");
      ps.executeUpdate();
    }
    assertThat(store.names(p, 100)).containsExactly(p + "granted");
  }

  /** With createTable off, a table that does not exist lists nothing, and is not created. */
  @Test
  void aMissingTableHasNoNamesAndIsNotCreated() throws Exception {
    String table = PostgresServers.freshTable();
    String qualified = "no_such_schema_" + table.substring(2) + ".leases";
    for (String t : List.of(table, qualified)) {
      try (PostgresLeaseStore s = PostgresLeaseStore.builder(pool).table(t).createTable(false)
          .build()) {
        assertThat(s.names("", 10)).as(t).isEmpty();
      }
    }
    try (Connection c = PostgresServers.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT to_regclass('" + table + "') IS NULL")) {
      rs.next();
      assertThat(rs.getBoolean(1)).as("the listing must not create the table").isTrue();
    }
  }

  /**
   * The listing is bounded like every statement: behind an {@code ACCESS EXCLUSIVE} lock (a
   * migration's {@code ALTER TABLE}, a {@code VACUUM FULL}) it fails with the call timeout instead
   * of waiting for the lock.
   */
  @Test
  void aListingThatCannotFinishFailsWithinTheCallTimeout() throws Exception {
    String table = PostgresServers.freshTable();
    try (PostgresLeaseStore s = PostgresLeaseStore.builder(pool).table(table)
        .callTimeout(Duration.ofMillis(500)).build();
        Connection locker = PostgresServers.connect()) {
      hold(s, List.of("x"));
      locker.setAutoCommit(false);
      try (Statement st = locker.createStatement()) {
        st.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
      }
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.names("", 10))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("listing of lease names")
          .hasMessageContaining("57014"); // query_canceled: the statement timeout
      // far below the 60 s the test would wait without the bound
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
      locker.rollback();
      assertThat(s.names("", 10)).containsExactly("x");
    }
  }
}
