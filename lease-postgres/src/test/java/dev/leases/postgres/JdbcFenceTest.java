package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseGrant;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link JdbcFence} on the shared test server, with a caller's table {@code fence_test_rows}. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcFenceTest {

  private static HikariDataSource pool;
  private static JdbcFence fence;

  @BeforeAll
  static void setUp() throws SQLException {
    pool = PostgresServers.pool(12);
    fence = JdbcFence.builder(pool).build();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS fence_test_rows ("
          + "id bigserial PRIMARY KEY, resource text NOT NULL, token bigint NOT NULL, "
          + "value text NOT NULL)");
    }
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  private static String resource() {
    return "res-" + UUID.randomUUID();
  }

  private static JdbcWork<Integer> insert(String resource, long token, String value) {
    return c -> {
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO fence_test_rows (resource, token, value) VALUES (?, ?, ?)")) {
        ps.setString(1, resource);
        ps.setLong(2, token);
        ps.setString(3, value);
        return ps.executeUpdate();
      }
    };
  }

  /** The accepted rows' values for {@code resource}, in commit order. */
  private static List<String> values(String resource) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT value FROM fence_test_rows WHERE resource = ? ORDER BY id")) {
      ps.setString(1, resource);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  @Test
  void equalOrHigherTokensWriteAndALowerOneIsRejectedWithNothingChanged() throws Exception {
    String r = resource();
    assertThat(fence.highestToken(r)).isEmpty();
    assertThat(fence.write(r, 5, insert(r, 5, "5a"))).isEqualTo(1);
    assertThat(fence.write(r, 5, insert(r, 5, "5b"))).as("same token again").isEqualTo(1);
    assertThat(fence.highestToken(r)).hasValue(5);

    AtomicBoolean ran = new AtomicBoolean();
    assertThatThrownBy(() -> fence.write(r, 4, c -> {
      ran.set(true);
      return insert(r, 4, "4").run(c);
    }))
        .isInstanceOfSatisfying(FencedOutException.class, e -> {
          assertThat(e.resource()).isEqualTo(r);
          assertThat(e.presentedToken()).isEqualTo(4);
          assertThat(e.highestToken()).isEqualTo(5);
        })
        .hasMessageContaining("must stop");
    assertThat(ran).as("the rejected work never ran").isFalse();
    assertThat(values(r)).containsExactly("5a", "5b");
    assertThat(fence.highestToken(r)).hasValue(5);

    assertThat(fence.write(r, 6, insert(r, 6, "6"))).isEqualTo(1);
    assertThat(values(r)).containsExactly("5a", "5b", "6");
    assertThat(fence.highestToken(r)).hasValue(6);
    assertThatThrownBy(() -> fence.write(r, 5, insert(r, 5, "5c")))
        .isInstanceOf(FencedOutException.class);
    assertThat(values(r)).containsExactly("5a", "5b", "6");
  }

  @Test
  void aFailingWorkRollsTheFenceBackToo() throws Exception {
    String r = resource();
    fence.write(r, 3, insert(r, 3, "3"));
    assertThatThrownBy(() -> fence.write(r, 9, c -> {
      insert(r, 9, "9").run(c);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT * FROM no_such_table_here");
      }
      return 0;
    }))
        .isInstanceOf(LeaseException.class)
        .hasMessageContaining("42P01")
        .hasMessageContaining("rolled back");
    assertThat(fence.highestToken(r)).as("the fence did not advance").hasValue(3);
    assertThat(values(r)).containsExactly("3");
    assertThatThrownBy(() -> fence.write(r, 10, c -> {
      throw new IllegalStateException("boom");
    })).isInstanceOf(IllegalStateException.class).hasMessage("boom");
    assertThat(fence.highestToken(r)).hasValue(3);
    assertThat(fence.write(r, 3, insert(r, 3, "3 again"))).isEqualTo(1);
  }

  @Test
  void leaseAndFencedWriteCommitTogetherInTheCallersTransaction() throws Exception {
    try (PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build()) {
      String name = "fenced-" + UUID.randomUUID();
      String r = resource();
      HolderId a = HolderId.generate();
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        LeaseGrant g = store.acquireOrRenew(c, name, a, Duration.ofSeconds(2)).orElseThrow();
        fence.write(c, r, g.token(), insert(r, g.token(), "in-tx"));
        assertThat(values(r)).as("nothing visible before the commit").isEmpty();
        c.commit();
        assertThat(values(r)).containsExactly("in-tx");
        assertThat(fence.highestToken(r)).hasValue(g.token());
        c.setAutoCommit(true);
      }
    }
  }

  /**
   * The store's and the fence's statements are bounded on the server by their call timeout, set
   * for the rest of the transaction; the caller's transaction goes on after them, and its work
   * must run under its own timeout again, whether the transaction's or the session's.
   */
  @Test
  void theCallersTransactionKeepsItsOwnStatementTimeoutAcrossAnAcquireAndAFencedWrite()
      throws Exception {
    try (PostgresLeaseStore store = PostgresLeaseStore.builder(pool)
        .callTimeout(Duration.ofMillis(1500)).build()) {
      String name = "fenced-" + UUID.randomUUID();
      String r = resource();
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("SET statement_timeout = '41s'");
          s.execute("SET LOCAL statement_timeout = '42s'");
        }
        LeaseGrant g = store.acquireOrRenew(c, name, HolderId.generate(), Duration.ofSeconds(2))
            .orElseThrow();
        assertThat(statementTimeout(c)).as("after the acquire").isEqualTo("42s");
        String inWork = fence.write(c, r, g.token(), x -> statementTimeout(x));
        assertThat(inWork).as("in the fenced work").isEqualTo("42s");
        assertThat(statementTimeout(c)).as("after the fenced write").isEqualTo("42s");
        c.commit();
        assertThat(statementTimeout(c)).as("after the commit: the session's").isEqualTo("41s");
        String inNextWork = fence.write(c, r, g.token(), x -> statementTimeout(x));
        assertThat(inNextWork).as("in the fenced work of a transaction without a local timeout")
            .isEqualTo("41s");
        c.rollback();
        try (Statement s = c.createStatement()) {
          s.execute("RESET statement_timeout");
        }
        c.setAutoCommit(true);
      }
    }
  }

  /**
   * A caller whose driver fetches through a cursor inside transactions ({@code
   * defaultRowFetchSize}) and whose transaction set a statement timeout of its own: the bound must
   * still cut a statement that waits on a row lock at the call timeout (57014), leaving the
   * connection usable. When the driver fetched the bounding statement's row through a cursor, the
   * server did not end that statement, the caller's own 30 s timer ran on, and the socket timeout
   * closed the caller's connection at the call timeout plus one second.
   */
  @Test
  void aStatementWaitingOnALockIsCutAtTheCallTimeoutAlsoWhenTheCallerFetchesThroughACursor()
      throws Exception {
    String r = resource();
    String name = "fenced-" + UUID.randomUUID();
    Duration timeout = Duration.ofMillis(500);
    JdbcFence impatient = JdbcFence.builder(pool).callTimeout(timeout).build();
    try (PostgresLeaseStore store = PostgresLeaseStore.builder(pool).callTimeout(timeout).build();
        Connection holder = pool.getConnection();
        Connection caller = java.sql.DriverManager.getConnection(
            PostgresServers.url() + "&defaultRowFetchSize=1")) {
      impatient.write(r, 1, c -> 1);
      HolderId first = HolderId.generate();
      store.acquireOrRenew(name, first, Duration.ofSeconds(30)).orElseThrow();
      assertThat(store.release(name, first)).isTrue(); // free: an acquire locks its row
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT 1 FROM lease_fences WHERE resource = '" + r + "' FOR UPDATE");
        s.execute("SELECT 1 FROM leases WHERE name = '" + name + "' FOR UPDATE");
      }
      caller.setAutoCommit(false);
      setOwnTimeoutInItsTransaction(caller);
      assertThatThrownBy(() -> store.acquireOrRenew(caller, name, HolderId.generate(),
          Duration.ofSeconds(30)))
          .isInstanceOf(dev.leases.LeaseStoreUnavailableException.class)
          .hasMessageContaining("57014");
      assertThat(caller.isClosed()).as("the caller's connection is closed").isFalse();
      caller.rollback();
      setOwnTimeoutInItsTransaction(caller);
      assertThatThrownBy(() -> impatient.write(caller, r, 2, c -> 1))
          .isInstanceOf(dev.leases.LeaseStoreUnavailableException.class)
          .hasMessageContaining("57014");
      assertThat(caller.isClosed()).as("the caller's connection is closed").isFalse();
      caller.rollback();
      holder.rollback();
      holder.setAutoCommit(true);
    }
  }

  /** The caller's own statement timeout, set by a statement of its open transaction. */
  private static void setOwnTimeoutInItsTransaction(Connection caller) throws SQLException {
    try (Statement s = caller.createStatement()) {
      s.execute("SET statement_timeout = '30s'");
    }
  }

  private static String statementTimeout(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW statement_timeout")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Test
  void callerConnectionMustBeInATransactionAtReadCommitted() throws Exception {
    String r = resource();
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> fence.write(c, r, 1, insert(r, 1, "x")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("setAutoCommit(false)");
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      c.setAutoCommit(false);
      assertThatThrownBy(() -> fence.write(c, r, 1, insert(r, 1, "x")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("SERIALIZABLE");
      c.rollback();
    }
    assertThat(values(r)).isEmpty();
    assertThat(fence.highestToken(r)).isEmpty();
  }

  /** A lower token blocked behind a higher one's open transaction is rejected once it commits. */
  @Test
  void aLowerTokenWaitingBehindAHigherOnesTransactionIsRejectedAfterItCommits() throws Exception {
    String r = resource();
    fence.write(r, 1, insert(r, 1, "1"));
    try (Connection high = pool.getConnection()) {
      high.setAutoCommit(false);
      fence.write(high, r, 10, insert(r, 10, "10"));
      CompletableFuture<Integer> low = CompletableFuture.supplyAsync(
          () -> fence.write(r, 9, insert(r, 9, "9")));
      await("the lower writer waits on the fence row").atMost(Duration.ofSeconds(10))
          .until(() -> waitingOnLocks() > 0);
      assertThat(low).isNotDone();
      high.commit();
      assertThatThrownBy(() -> low.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(FencedOutException.class)
          .hasMessageContaining("already accepted token 10");
      high.setAutoCommit(true);
    }
    assertThat(values(r)).containsExactly("1", "10");
  }

  /** ... and proceeds if the higher one rolls back, since that write never landed. */
  @Test
  void aLowerTokenWaitingBehindAHigherOnesTransactionProceedsIfItRollsBack() throws Exception {
    String r = resource();
    fence.write(r, 1, insert(r, 1, "1"));
    try (Connection high = pool.getConnection()) {
      high.setAutoCommit(false);
      fence.write(high, r, 10, insert(r, 10, "10"));
      CompletableFuture<Integer> low = CompletableFuture.supplyAsync(
          () -> fence.write(r, 9, insert(r, 9, "9")));
      await("the lower writer waits on the fence row").atMost(Duration.ofSeconds(10))
          .until(() -> waitingOnLocks() > 0);
      high.rollback();
      assertThat(low.get(10, TimeUnit.SECONDS)).isEqualTo(1);
      high.setAutoCommit(true);
    }
    assertThat(values(r)).containsExactly("1", "9");
    assertThat(fence.highestToken(r)).hasValue(9);
  }

  private static int waitingOnLocks() throws SQLException {
    try (Connection c = PostgresServers.connect(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity"
            + " WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO \"lease_fences\"%'")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void concurrentWritersWithDifferentTokensNeverLetALowerTokenLandAfterAHigherOne()
      throws Exception {
    String r = resource();
    int writers = 12;
    int writesEach = 15;
    List<Long> tokens = new ArrayList<>();
    for (long t = 1; t <= writers; t++) {
      tokens.add(t);
    }
    Collections.shuffle(tokens);
    ExecutorService executor = Executors.newFixedThreadPool(writers);
    try {
      CyclicBarrier start = new CyclicBarrier(writers);
      List<Future<int[]>> futures = new ArrayList<>();
      for (long token : tokens) {
        futures.add(executor.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          int accepted = 0;
          int rejected = 0;
          for (int i = 0; i < writesEach; i++) {
            try {
              fence.write(r, token, insert(r, token, token + "/" + i));
              accepted++;
            } catch (FencedOutException e) {
              assertThat(e.highestToken()).isGreaterThan(token);
              rejected++;
            }
          }
          return new int[] {accepted, rejected};
        }));
      }
      int accepted = 0;
      for (Future<int[]> f : futures) {
        accepted += f.get(60, TimeUnit.SECONDS)[0];
      }
      List<Long> landed = new ArrayList<>();
      for (String v : values(r)) {
        landed.add(Long.parseLong(v.substring(0, v.indexOf('/'))));
      }
      assertThat(landed).hasSize(accepted);
      assertThat(landed).as("tokens in commit order").isSorted();
      assertThat(landed).contains((long) writers); // the highest token always gets through
      assertThat(fence.highestToken(r)).isEqualTo(OptionalLong.of(writers));
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void badArgumentsFailFastWithClearMessages() {
    assertThatThrownBy(() -> fence.write("r", 0, c -> 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive");
    assertThatThrownBy(() -> fence.write(" ", 1, c -> 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("resource");
    assertThatThrownBy(() -> fence.write("x".repeat(201), 1, c -> 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("200");
    assertThatThrownBy(() -> fence.write("r", 1, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> JdbcFence.builder(pool).table("fences; drop table x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[a-z_][a-z0-9_]*");
  }

  /**
   * An unpaired surrogate has no UTF-8 encoding (the driver sends {@code ?}), so "c\uD800x" would be
   * the fence of "c?x": it is refused, and "c?x" stays a resource of its own.
   */
  @Test
  void malformedUtf16ResourcesAreRefusedAndTheirQuestionMarkTwinIsItsOwnResource() throws Exception {
    String suffix = UUID.randomUUID().toString();
    String malformed = "c\uD800x" + suffix;
    String twin = "c?x" + suffix;
    assertThatThrownBy(() -> fence.write(malformed, 10, c -> 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fence resource")
        .hasMessageContaining("UTF-16");
    assertThatThrownBy(() -> fence.highestToken(malformed))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> fence.write(c, malformed, 10, x -> 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      c.rollback();
    }
    assertThat(fence.write(twin, 1, insert(twin, 1, "1"))).isEqualTo(1);
    assertThat(fence.highestToken(twin)).hasValue(1);
  }

  @Test
  void malformedUtf16TableAndSchemaNamesAreRefused() {
    for (String table : List.of("c\uD800x", "c\uDC00x.fences", "fences.c\uD800x")) {
      assertThatThrownBy(() -> JdbcFence.builder(pool).table(table))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> JdbcFence.schemaSql(table))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    }
  }

  @Test
  void aCustomFenceTableIsCreatedAndUsed() throws Exception {
    String table = "fences_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    JdbcFence custom = JdbcFence.builder(pool).table(table).build();
    String r = resource();
    try {
      custom.write(r, 2, insert(r, 2, "2"));
      assertThat(custom.highestToken(r)).hasValue(2);
      assertThat(fence.highestToken(r)).as("another table, another fence").isEmpty();
      assertThatThrownBy(() -> custom.write(r, 1, insert(r, 1, "1")))
          .isInstanceOf(FencedOutException.class);
    } finally {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }
}
