package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.FreePorts;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

/** PostgreSQL-specific behaviour of {@link PostgresLeaseStore}, on the shared test server. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresLeaseStoreTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  private HikariDataSource pool(int size) {
    return closeLater(PostgresServers.pool(size));
  }

  private PostgresLeaseStore store(HikariDataSource pool) {
    return closeLater(PostgresLeaseStore.builder(pool).build());
  }

  private static String name() {
    return "pg-" + UUID.randomUUID();
  }

  private static String freshTable() {
    return PostgresServers.freshTable();
  }

  private static Instant serverInstant(Connection c, String expression) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT " + expression)) {
      rs.next();
      return rs.getObject(1, OffsetDateTime.class).toInstant();
    }
  }

  private static void exec(String sql) throws SQLException {
    PostgresServers.exec(sql);
  }

  // ---------------------------------------------------------------- caller's transaction

  @Test
  void acquireInALongOpenTransactionComputesExpiryFromTheCurrentTime() throws Exception {
    PostgresLeaseStore store = store(pool(2));
    String name = name();
    HolderId holder = HolderId.generate();
    Duration ttl = Duration.ofSeconds(3);
    try (Connection c = PostgresServers.connect()) {
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      c.setAutoCommit(false);
      Instant transactionStart = serverInstant(c, "now()");
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_sleep(1.5)");
      }
      LeaseGrant g = store.acquireOrRenew(c, name, holder, ttl).orElseThrow();
      Instant statementTime = serverInstant(c, "clock_timestamp()");

      // From now() the expiry would be transactionStart + ttl; from clock_timestamp() it is at
      // least 1.5 s later, since pg_sleep ran between the two.
      assertThat(g.expiresAt()).isAfterOrEqualTo(transactionStart.plus(ttl).plusMillis(1500));
      assertThat(g.expiresAt()).isBeforeOrEqualTo(statementTime.plus(ttl));
      assertThat(g.ttl()).isEqualTo(ttl);

      // Not visible before the commit: FREE, with the sequence's bound (which has seen the draw).
      LeaseState outside = store.inspect(name);
      assertThat(outside).as("not visible before the commit").isInstanceOf(LeaseState.Free.class);
      assertThat(outside.lastToken()).isGreaterThanOrEqualTo(g.token());
      c.commit();
    }
    LeaseState.Held held = (LeaseState.Held) store.inspect(name);
    assertThat(held.holder()).isEqualTo(holder);
    assertThat(held.remaining()).isGreaterThan(ttl.minusMillis(1500)).isLessThanOrEqualTo(ttl);
  }

  @Test
  void rollingBackTheCallersTransactionUndoesTheGrant() throws Exception {
    PostgresLeaseStore store = store(pool(2));
    String name = name();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    long drawn;
    try (Connection c = PostgresServers.connect()) {
      c.setAutoCommit(false);
      drawn = store.acquireOrRenew(c, name, a, TTL).orElseThrow().token();
      c.rollback();
    }
    assertThat(rows("leases", name)).as("no row").isZero();
    LeaseState state = store.inspect(name);
    assertThat(state).isInstanceOf(LeaseState.Free.class);
    assertThat(state.lastToken()).as("the sequence's bound").isGreaterThanOrEqualTo(drawn);
    long bound = store.token(name).orElseThrow();
    assertThat(bound).isGreaterThanOrEqualTo(drawn);
    LeaseGrant gb = store.acquireOrRenew(name, b, TTL).orElseThrow();
    assertThat(gb.token()).as("a rolled-back token is never reused").isGreaterThan(bound);
  }

  @ParameterizedTest
  @ValueSource(ints = {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE})
  void callerConnectionAboveReadCommittedIsRefusedWithAClearMessage(int level) throws Exception {
    PostgresLeaseStore store = store(pool(2));
    String name = name();
    try (Connection c = PostgresServers.connect()) {
      c.setTransactionIsolation(level);
      c.setAutoCommit(false);
      assertThatThrownBy(() -> store.acquireOrRenew(c, name, HolderId.generate(), TTL))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(level == Connection.TRANSACTION_SERIALIZABLE
              ? "SERIALIZABLE" : "REPEATABLE READ")
          .hasMessageContaining("READ COMMITTED")
          .hasMessageContaining("setTransactionIsolation");
      c.rollback();
    }
    assertThat(rows("leases", name)).as("nothing was written").isZero();
  }

  @Test
  void aCallersOpenTransactionMakesContendersTimeOutAsUnavailableNotHang() throws Exception {
    HikariDataSource pool = pool(2);
    PostgresLeaseStore patient = store(pool);
    PostgresLeaseStore hasty = closeLater(PostgresLeaseStore.builder(pool)
        .callTimeout(Duration.ofMillis(300)).build());
    String name = name();
    patient.inspect(name); // creates the table outside the transaction below
    try (Connection c = PostgresServers.connect()) {
      c.setAutoCommit(false);
      patient.acquireOrRenew(c, name, HolderId.generate(), TTL).orElseThrow();
      assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
          assertThatThrownBy(() -> hasty.acquireOrRenew(name, HolderId.generate(), TTL))
              .isInstanceOf(LeaseStoreUnavailableException.class)
              .hasMessageContaining("57014") // query_canceled: the statement timeout fired
              .hasMessageContaining("outcome is unknown"));
      c.commit();
    }
    assertThat(hasty.acquireOrRenew(name, HolderId.generate(), TTL)).as("held, not an error")
        .isEmpty();
  }

  // ---------------------------------------------------------------- concurrency

  @Test
  void sixteenRacingContendersOnOnePoolNeverErrAndExactlyOneWinsEachRound() throws Exception {
    raceRounds(store(pool(8)), 40);
  }

  /**
   * The pool hands out SERIALIZABLE connections; the store must force READ COMMITTED, or the racing
   * upserts fail with serialization errors (40001) instead of seeing the winner's row.
   */
  @Test
  void racingContendersOnASerializablePoolNeverErr() throws Exception {
    HikariDataSource serializable = closeLater(PostgresServers.pool(PostgresServers.url(), 8,
        config -> config.setTransactionIsolation("TRANSACTION_SERIALIZABLE")));
    raceRounds(store(serializable), 15);
  }

  /** Even rounds race for a new name (insert path), odd rounds for a released one (update path). */
  private static void raceRounds(PostgresLeaseStore store, int rounds) throws Exception {
    int threads = 16;
    ExecutorService executor = Executors.newFixedThreadPool(threads);
    try {
      String reused = name();
      long lastReusedToken = 0;
      for (int round = 0; round < rounds; round++) {
        boolean fresh = round % 2 == 0;
        String name = fresh ? name() : reused;
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<Optional<LeaseGrant>>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          HolderId holder = HolderId.generate();
          futures.add(executor.submit(() -> {
            start.await(30, TimeUnit.SECONDS);
            return store.acquireOrRenew(name, holder, TTL);
          }));
        }
        List<LeaseGrant> grants = new ArrayList<>();
        for (Future<Optional<LeaseGrant>> f : futures) {
          f.get(60, TimeUnit.SECONDS).ifPresent(grants::add); // an error fails the test here
        }
        assertThat(grants).as("grants in round %d (%s name)", round, fresh ? "new" : "released")
            .hasSize(1);
        LeaseGrant winner = grants.get(0);
        LeaseState.Held held = (LeaseState.Held) store.inspect(name);
        assertThat(held.holder()).isEqualTo(winner.holder());
        assertThat(held.lastToken()).isEqualTo(winner.token());
        if (!fresh) {
          assertThat(winner.token()).isGreaterThan(lastReusedToken);
          lastReusedToken = winner.token();
        }
        assertThat(store.release(name, winner.holder())).isTrue();
      }
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void storesStartingTogetherCreateTheirTableOnceWithoutErrors() throws Exception {
    HikariDataSource pool = pool(8);
    String table = freshTable();
    int n = 8;
    ExecutorService executor = Executors.newFixedThreadPool(n);
    try {
      CyclicBarrier start = new CyclicBarrier(n);
      List<Future<LeaseState>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        PostgresLeaseStore sameTable = closeLater(PostgresLeaseStore.builder(pool).table(table)
            .build());
        futures.add(executor.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          return sameTable.inspect("first-call");
        }));
      }
      for (Future<LeaseState> f : futures) {
        assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(new LeaseState.Free("first-call", 0));
      }
    } finally {
      executor.shutdownNow();
      exec("DROP TABLE IF EXISTS " + table + "; DROP SEQUENCE IF EXISTS " + table + "_token_seq");
    }
  }

  // ---------------------------------------------------------------- tokens

  /** After the row is deleted, token() and inspect() answer the sequence's bound, not "none". */
  @Test
  void outOfBandDeleteOfTheRowStillGivesABoundAndALargerNextToken() throws Exception {
    PostgresLeaseStore store = store(pool(2));
    String name = name();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    long t1 = store.acquireOrRenew(name, a, TTL).orElseThrow().token();
    deleteRow("leases", name);
    long bound = store.token(name).orElseThrow(() -> new AssertionError("token(name) is empty"
        + " after the delete, though " + t1 + " was issued"));
    assertThat(bound).isGreaterThanOrEqualTo(t1);
    LeaseState state = store.inspect(name);
    assertThat(state).isInstanceOf(LeaseState.Free.class);
    assertThat(state.lastToken()).isGreaterThanOrEqualTo(t1);
    long t2 = store.acquireOrRenew(name, b, TTL).orElseThrow().token();
    assertThat(t2).isGreaterThan(bound).isGreaterThan(state.lastToken());
    assertThat(store.release(name, b)).isTrue();
    deleteRow("leases", name);
    long t3 = store.acquireOrRenew(name, b, TTL).orElseThrow().token();
    assertThat(t3).isGreaterThan(t2);
  }

  @Test
  void droppingAndRecreatingTheTableKeepsTokensIncreasing() throws Exception {
    String table = freshTable();
    HikariDataSource pool = pool(2);
    String name = name();
    HolderId a = HolderId.generate();
    long t1;
    try (PostgresLeaseStore first = PostgresLeaseStore.builder(pool).table(table).build()) {
      t1 = first.acquireOrRenew(name, a, TTL).orElseThrow().token();
    }
    try {
      exec("DROP TABLE " + table);
      try (PostgresLeaseStore second = PostgresLeaseStore.builder(pool).table(table).build()) {
        long t2 = second.acquireOrRenew(name, a, TTL).orElseThrow().token();
        assertThat(t2).as("the sequence outlives the table").isGreaterThan(t1);
      }
    } finally {
      exec("DROP TABLE IF EXISTS " + table + "; DROP SEQUENCE IF EXISTS " + table + "_token_seq");
    }
  }

  @Test
  void grantedTtlIsRoundedUpToTheMillisecondAndExpiryComesFromTheServer() throws Exception {
    PostgresLeaseStore store = store(pool(2));
    String name = name();
    Duration asked = Duration.ofMillis(1500).plusNanos(1);
    Instant before;
    try (Connection c = PostgresServers.connect()) {
      before = serverInstant(c, "clock_timestamp()");
    }
    LeaseGrant g = store.acquireOrRenew(name, HolderId.generate(), asked).orElseThrow();
    Instant after;
    try (Connection c = PostgresServers.connect()) {
      after = serverInstant(c, "clock_timestamp()");
    }
    assertThat(g.ttl()).isEqualTo(Duration.ofMillis(1501));
    assertThat(g.expiresAt()).isBetween(before.plus(g.ttl()), after.plus(g.ttl()));
  }

  // ---------------------------------------------------------------- table names

  @ParameterizedTest
  @ValueSource(strings = {
      "leases; drop table x", "leases\"; drop table x; --", "\"leases\"", "'leases'", "Leases",
      "1leases", "le-ases", "lëases", "a.b.c", ".leases", "leases.", "my schema.leases", "",
      " ", "leases ", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 54 */,
      "public.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 7 + 47 = 55 */})
  void hostileOrTooLongTableNamesAreRejectedWithWhatIsAllowed(String table) {
    PostgresLeaseStore.Builder builder = PostgresLeaseStore.builder(new PGSimpleDataSource());
    assertThatThrownBy(() -> builder.table(table))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[a-z_][a-z0-9_]*")
        .hasMessageContaining("53 characters");
    assertThatThrownBy(() -> PostgresLeaseStore.schemaSql(table))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JdbcFence.builder(new PGSimpleDataSource()).table(table + ";"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void malformedUtf16TableAndSchemaNamesAreRefused() {
    PostgresLeaseStore.Builder builder = PostgresLeaseStore.builder(new PGSimpleDataSource());
    for (String table : List.of("c\uD800x", "c\uDC00x.leases", "leases_schema.c\uD800x")) {
      assertThatThrownBy(() -> builder.table(table))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease table")
          .hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> PostgresLeaseStore.schemaSql(table))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    }
  }

  /** Lease names are checked by lease-api: "c\uD800x" is refused, "c?x" is a lease of its own. */
  @Test
  void malformedUtf16LeaseNamesAreRefusedAndTheirQuestionMarkTwinIsItsOwnLease() {
    PostgresLeaseStore store = store(pool(2));
    String suffix = UUID.randomUUID().toString();
    HolderId a = HolderId.generate();
    assertThatThrownBy(() -> store.acquireOrRenew("c\uD800x" + suffix, a, TTL))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    assertThatThrownBy(() -> store.inspect("c\uD800x" + suffix))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    LeaseGrant g = store.acquireOrRenew("c?x" + suffix, a, TTL).orElseThrow();
    assertThat(((LeaseState.Held) store.inspect("c?x" + suffix)).lastToken()).isEqualTo(g.token());
  }

  @Test
  void longestAllowedNamesAndReservedWordsWork() throws Exception {
    HikariDataSource pool = pool(2);
    String longest = "l" + "x".repeat(40) + freshTable().substring(2, 14); // 53 characters
    assertThat(longest).hasSize(53);
    exec("CREATE SCHEMA IF NOT EXISTS lease_test_schema");
    List<String> tables = List.of(longest, "order", "lease_test_schema.user");
    try {
      for (String table : tables) {
        try (PostgresLeaseStore s = PostgresLeaseStore.builder(pool).table(table).build()) {
          String name = name();
          HolderId a = HolderId.generate();
          long t = s.acquireOrRenew(name, a, TTL).orElseThrow().token();
          AtomicInteger woken = new AtomicInteger();
          s.onRelease(name, woken::incrementAndGet);
          assertThat(s.release(name, a)).isTrue();
          await("release hint on table " + table).atMost(Duration.ofSeconds(10))
              .until(() -> woken.get() > 0);
          assertThat(s.acquireOrRenew(name, a, TTL).orElseThrow().token()).isGreaterThan(t);
        }
      }
    } finally {
      exec("DROP TABLE IF EXISTS " + longest + ", \"order\", lease_test_schema.\"user\";"
          + " DROP SEQUENCE IF EXISTS " + longest + "_token_seq, order_token_seq,"
          + " lease_test_schema.user_token_seq; DROP SCHEMA IF EXISTS lease_test_schema");
    }
  }

  @Test
  void withoutCreateTableAMissingTableIsReportedWithItsSqlStateAndSchemaSqlCreatesIt()
      throws Exception {
    HikariDataSource pool = pool(2);
    String table = freshTable();
    try (PostgresLeaseStore s = PostgresLeaseStore.builder(pool).table(table).createTable(false)
        .build()) {
      assertThatThrownBy(() -> s.inspect("x"))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("42P01"); // undefined_table
      try (Connection c = PostgresServers.connect(); Statement st = c.createStatement()) {
        for (String ddl : PostgresLeaseStore.schemaSql(table)) {
          st.execute(ddl);
        }
      }
      assertThat(s.acquireOrRenew("x", HolderId.generate(), TTL)).isPresent();
    } finally {
      exec("DROP TABLE IF EXISTS " + table + "; DROP SEQUENCE IF EXISTS " + table + "_token_seq");
    }
  }

  // ---------------------------------------------------------------- failures are bounded

  @Test
  void unreachableServerFailsAsUnavailableWithinABoundNotAHang() {
    int closedPort = FreePorts.pick();
    HikariDataSource pool = closeLater(PostgresServers.pool(
        "jdbc:postgresql://127.0.0.1:" + closedPort + "/postgres?user=postgres", 2, config -> {
          config.setConnectionTimeout(500);
          config.setInitializationFailTimeout(-1);
        }));
    PostgresLeaseStore store = store(pool);
    HolderId a = HolderId.generate();
    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
      assertThatThrownBy(() -> store.acquireOrRenew("x", a, TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("SQLState");
      assertThatThrownBy(() -> store.release("x", a))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      assertThatThrownBy(() -> store.inspect("x"))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      assertThatThrownBy(() -> store.token("x"))
          .isInstanceOf(LeaseStoreUnavailableException.class);
    });
  }

  /** A server that accepts connections and never answers: the pool's timeout bounds the call. */
  @Test
  void silentServerFailsAsUnavailableWithinABoundNotAHang() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      List<Socket> accepted = new CopyOnWriteArrayList<>();
      Thread acceptor = new Thread(() -> {
        try {
          while (true) {
            accepted.add(silent.accept());
          }
        } catch (IOException e) {
          // closed
        }
      }, "silent-server");
      acceptor.setDaemon(true);
      acceptor.start();
      HikariDataSource pool = closeLater(PostgresServers.pool("jdbc:postgresql://127.0.0.1:"
          + silent.getLocalPort() + "/postgres?user=postgres", 2, config -> {
            config.setConnectionTimeout(1000);
            config.setInitializationFailTimeout(-1);
          }));
      PostgresLeaseStore store = store(pool);
      assertTimeoutPreemptively(Duration.ofSeconds(30), () ->
          assertThatThrownBy(() -> store.acquireOrRenew("x", HolderId.generate(), TTL))
              .isInstanceOf(LeaseStoreUnavailableException.class));
      assertThat(accepted).as("the driver did reach the silent server").isNotEmpty();
      for (Socket s : accepted) {
        s.close();
      }
    }
  }

  // ---------------------------------------------------------------- release hints

  @Test
  void releaseWakesASubscriberOfAnotherStoreThroughListenNotify() throws Exception {
    PostgresLeaseStore holderStore = store(pool(2));
    PostgresLeaseStore followerStore = store(pool(2));
    String name = name();
    String other = name();
    HolderId a = HolderId.generate();
    AtomicInteger woken = new AtomicInteger();
    AtomicInteger otherWoken = new AtomicInteger();
    holderStore.acquireOrRenew(name, a, TTL).orElseThrow();
    followerStore.onRelease(name, woken::incrementAndGet);
    followerStore.onRelease(other, otherWoken::incrementAndGet);
    assertThat(woken).hasValue(0);

    assertThat(holderStore.release(name, a)).isTrue();
    await("the follower's listener runs").atMost(Duration.ofSeconds(10))
        .until(() -> woken.get() == 1);
    assertThat(otherWoken).as("hints are dispatched by lease name").hasValue(0);

    // a refused release (not the holder) sends nothing
    holderStore.acquireOrRenew(name, a, TTL).orElseThrow();
    assertThat(holderStore.release(name, HolderId.generate())).isFalse();
    assertThat(holderStore.release(name, a)).isTrue();
    await("exactly one more hint").atMost(Duration.ofSeconds(10)).until(() -> woken.get() == 2);
  }

  @Test
  void aClosedSubscriptionIsNotWoken() throws Exception {
    PostgresLeaseStore holderStore = store(pool(2));
    PostgresLeaseStore followerStore = store(pool(2));
    String name = name();
    HolderId a = HolderId.generate();
    AtomicInteger closedOne = new AtomicInteger();
    AtomicInteger openOne = new AtomicInteger();
    LeaseStore.Subscription sub = followerStore.onRelease(name, closedOne::incrementAndGet);
    followerStore.onRelease(name, openOne::incrementAndGet);
    sub.close();
    sub.close();
    holderStore.acquireOrRenew(name, a, TTL).orElseThrow();
    assertThat(holderStore.release(name, a)).isTrue();
    await("the open subscription is woken").atMost(Duration.ofSeconds(10))
        .until(() -> openOne.get() == 1);
    assertThat(closedOne).hasValue(0);
  }

  @Test
  void withoutAListenConnectionOnlyTheStoresOwnReleasesAreHeard() {
    PGSimpleDataSource plain = new PGSimpleDataSource();
    plain.setURL(PostgresServers.url());
    PostgresLeaseStore store = closeLater(PostgresLeaseStore.builder(plain).build());
    String name = name();
    HolderId a = HolderId.generate();
    AtomicInteger woken = new AtomicInteger();
    store.onRelease(name, woken::incrementAndGet);
    store.acquireOrRenew(name, a, TTL).orElseThrow();
    assertThat(store.release(name, a)).isTrue();
    assertThat(woken).as("dispatched on the releasing thread").hasValue(1);
  }

  @Test
  void anExplicitListenConnectionIsUsedAndClosedWithTheStore() throws Exception {
    PGSimpleDataSource plain = new PGSimpleDataSource();
    plain.setURL(PostgresServers.url());
    String appName = "listen-" + UUID.randomUUID().toString().substring(0, 8);
    PostgresLeaseStore follower = PostgresLeaseStore.builder(plain)
        .listenConnection(() -> {
          try {
            Connection c = plain.getConnection();
            try (Statement s = c.createStatement()) {
              s.execute("SET application_name = '" + appName + "'");
            }
            return c;
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        })
        .build();
    PostgresLeaseStore holder = store(pool(2));
    String name = name();
    HolderId a = HolderId.generate();
    AtomicInteger woken = new AtomicInteger();
    try {
      follower.onRelease(name, woken::incrementAndGet);
      assertThat(sessionsNamed(appName)).isEqualTo(1);
      holder.acquireOrRenew(name, a, TTL).orElseThrow();
      assertThat(holder.release(name, a)).isTrue();
      await("hint via the supplied connection").atMost(Duration.ofSeconds(10))
          .until(() -> woken.get() == 1);
    } finally {
      follower.close();
    }
    await("the listen connection is closed").atMost(Duration.ofSeconds(10))
        .until(() -> sessionsNamed(appName) == 0);
    assertThatThrownBy(() -> follower.onRelease(name, () -> {}))
        .isInstanceOf(LeaseStoreClosedException.class);
  }

  private static int sessionsNamed(String applicationName) throws SQLException {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
      ps.setString(1, applicationName);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  // ---------------------------------------------------------------- lifecycle

  @Test
  void closingTheStoreLeavesTheCallersDataSourceOpen() {
    HikariDataSource pool = pool(2);
    PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build();
    store.onRelease(name(), () -> {});
    store.close();
    assertThat(pool.isClosed()).isFalse();
    assertThatThrownBy(() -> store.inspect("x")).isInstanceOf(LeaseStoreClosedException.class);
    PostgresLeaseStore again = store(pool);
    assertThat(again.inspect(name())).isInstanceOf(LeaseState.Free.class);
  }

  @Test
  void builderRejectsBadSettingsWithMessagesThatSayWhatToChange() {
    PostgresLeaseStore.Builder b = PostgresLeaseStore.builder(new PGSimpleDataSource());
    assertThatThrownBy(() -> b.callTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeout");
    assertThatThrownBy(() -> b.callTimeout(Duration.ofHours(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shorter");
    assertThatThrownBy(() -> b.table(null)).isInstanceOf(NullPointerException.class)
        .hasMessageContaining("table");
    assertThatThrownBy(() -> PostgresLeaseStore.builder(null))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("dataSource");
  }

  private static int rows(String table, String name) throws SQLException {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM " + table + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static void deleteRow(String table, String name) throws SQLException {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement("DELETE FROM " + table + " WHERE name = ?")) {
      ps.setString(1, name);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }
}
