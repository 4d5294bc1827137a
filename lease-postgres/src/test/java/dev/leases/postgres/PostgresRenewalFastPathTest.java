package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch's renewal fast path: names this store last granted to the holder are renewed by one
 * statement that only extends expiries; every name it does not renew (taken, expired, released or
 * deleted since) goes on to the full path in the same call, which decides on the latest rows.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresRenewalFastPathTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  private final String table = PostgresServers.freshTable();
  private final HikariDataSource pool = PostgresServers.pool(4);
  /** The SQL of every statement the store prepared, in order. */
  private final List<String> prepared = new CopyOnWriteArrayList<>();
  private final PostgresLeaseStore store = PostgresLeaseStore.builder(
      StatementRecorder.recording(pool, sql -> {
        if (sql != null) {
          prepared.add(sql);
        }
      })).table(table).build();

  @AfterEach
  void close() {
    store.close();
    pool.close();
  }

  private static List<String> names(int count) {
    String base = "fast-" + UUID.randomUUID();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      names.add(base + "-" + i);
    }
    return names;
  }

  private static long token(Map<String, AcquireResult> answers, String name) {
    return answers.get(name).grant().orElseThrow(
        () -> new AssertionError(name + " not granted: " + answers.get(name))).token();
  }

  private void exec(String sql) throws Exception {
    PostgresServers.exec(sql.replace("$t", table));
  }

  @Test
  void aRenewalOfNamesStillHeldIsOneStatementThatTouchesNoTokenAndInsertsNothing() {
    List<String> names = names(500);
    HolderId a = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    int from = prepared.size();
    Map<String, AcquireResult> renewed = store.acquireOrRenewAll(names, a, TTL);
    assertThat(prepared.subList(from, prepared.size())).as("the fast path alone")
        .hasSize(1).allMatch(sql -> !sql.contains("INSERT") && !sql.contains("nextval"));
    for (String n : names) {
      assertThat(token(renewed, n)).isEqualTo(token(first, n));
      assertThat(renewed.get(n).grant().orElseThrow().expiresAt())
          .isAfterOrEqualTo(first.get(n).grant().orElseThrow().expiresAt());
    }
    assertThat(store.inspect(names.get(7)).lastToken()).isEqualTo(token(first, names.get(7)));
  }

  /**
   * Of four names, one was taken by another holder, one expired, one deleted by hand and one
   * released since the last answer: the fast path renews the others, the full path (one more
   * statement, same call) refuses the taken one saying who holds it and grants the other three as
   * new tenures with new tokens.
   */
  @Test
  void namesChangedSinceTheLastAnswerFallBackToTheFullPath() throws Exception {
    List<String> names = names(20);
    HolderId a = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    String taken = names.get(3);
    String expired = names.get(8);
    String deleted = names.get(12);
    String released = names.get(17);
    exec("UPDATE $t SET holder = 'someone-else', token = nextval('" + table + "_token_seq'),"
        + " expires_at = clock_timestamp() + interval '1 minute' WHERE name = '" + taken + "'");
    exec("UPDATE $t SET expires_at = clock_timestamp() - interval '1 second'"
        + " WHERE name = '" + expired + "'");
    exec("DELETE FROM $t WHERE name = '" + deleted + "'");
    exec("UPDATE $t SET holder = NULL WHERE name = '" + released + "'");
    long takenToken = store.inspect(taken).lastToken();

    int from = prepared.size();
    Map<String, AcquireResult> again = store.acquireOrRenewAll(names, a, TTL);
    assertThat(prepared.subList(from, prepared.size())).as("the fast path, then the full path")
        .hasSize(2);
    assertThat(prepared.get(from + 1)).contains("INSERT").contains("FOR UPDATE");
    assertThat(again.keySet()).containsExactlyElementsOf(names);

    assertHeldBy(again.get(taken), new HolderId("someone-else"), takenToken);
    for (String n : List.of(expired, deleted, released)) {
      assertThat(token(again, n)).as("%s is a new tenure", n)
          .isGreaterThan(takenToken).isGreaterThan(token(first, n));
    }
    for (String n : names) {
      if (!List.of(taken, expired, deleted, released).contains(n)) {
        assertThat(token(again, n)).as("%s renewed", n).isEqualTo(token(first, n));
      }
    }

    from = prepared.size();
    store.acquireOrRenewAll(names, a, TTL);
    assertThat(prepared.subList(from, prepared.size()))
        .as("the refused name goes straight to the full path, the rest to the fast path")
        .hasSize(2);
  }

  /**
   * The fast path renews only a row that shows its holder unexpired: a holder whose names were
   * taken meanwhile by another holder of the same store (so the store's memory of the last answer
   * is wrong for the first) gets refusals that say who holds them, and no token moves.
   */
  @Test
  void aStaleMemoryOfTheLastAnswerGrantsNothing() throws Exception {
    List<String> names = names(50);
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    exec("UPDATE $t SET holder = '" + b.value() + "' WHERE name LIKE '"
        + names.get(0).substring(0, names.get(0).lastIndexOf('-')) + "-%'");
    Map<String, AcquireResult> refused = store.acquireOrRenewAll(names, a, TTL);
    for (String n : names) {
      assertHeldBy(refused.get(n), b, token(first, n));
      assertThat(store.inspect(n)).isInstanceOf(LeaseState.Held.class)
          .satisfies(s -> assertThat(((LeaseState.Held) s).holder()).isEqualTo(b));
    }
  }

  /** Released names take the full path next time: the release forgets the last answer. */
  @Test
  void aReleasedBatchIsReacquiredWithNewTokensByTheFullPath() {
    List<String> names = names(30);
    HolderId a = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    assertThat(store.releaseAll(names, a).values()).containsOnly(true);
    assertThat(store.release(names.get(0), a)).isFalse();
    int from = prepared.size();
    Map<String, AcquireResult> again = store.acquireOrRenewAll(names, a, TTL);
    assertThat(prepared.subList(from, prepared.size())).as("the full path alone").hasSize(1);
    for (String n : names) {
      assertThat(token(again, n)).isGreaterThan(token(first, n));
    }
  }

  /**
   * A holder renewing by the fast path and a contender trying the same names by the full path at
   * the same time lock the rows in the same (name) order, so neither ever fails with a deadlock
   * (SQLState 40P01, which the store would throw as unavailable); the holder keeps its tokens. The
   * rows are stored in reverse name order, so that a path locking in storage order would conflict.
   */
  @Test
  void aFastRenewalAndAContendersFullBatchDoNotDeadlock() throws Exception {
    List<String> names = names(2000);
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    store.token(names.get(0)); // creates the table
    // rows stored in reverse name order, so that a scan in storage order locks against name order
    exec("INSERT INTO $t (name, holder, token, expires_at) SELECT n, NULL, 1, '-infinity'"
        + " FROM unnest(ARRAY['" + String.join("','", names) + "']) AS u(n) ORDER BY n DESC");
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    List<String> reversed = new ArrayList<>(names);
    java.util.Collections.reverse(reversed);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (PostgresLeaseStore contender = PostgresLeaseStore.builder(pool).table(table).build()) {
      Future<?> holding = threads.submit(() -> {
        for (int i = 0; i < 15; i++) {
          Map<String, AcquireResult> r = store.acquireOrRenewAll(names, a, TTL);
          for (String n : names) {
            assertThat(token(r, n)).isEqualTo(token(first, n));
          }
        }
        return null;
      });
      Future<?> contending = threads.submit(() -> {
        for (int i = 0; i < 15; i++) {
          assertThat(contender.acquireOrRenewAll(reversed, b, TTL).values())
              .allMatch(r -> r instanceof AcquireResult.Refused);
        }
        return null;
      });
      holding.get(100, TimeUnit.SECONDS);
      contending.get(100, TimeUnit.SECONDS);
    } finally {
      threads.shutdownNow();
    }
  }

  /** Starts, on {@code c}, a transaction that runs {@code sql} with {@code names} as ?1. */
  private void begin(Connection c, String sql, List<String> names) throws Exception {
    c.setAutoCommit(false);
    try (PreparedStatement ps = c.prepareStatement(sql.replace("$t", table))) {
      ps.setArray(1, c.createArrayOf("text", names.toArray()));
      ps.executeUpdate();
    }
  }

  private static void assertHeldBy(AcquireResult answer, HolderId holder, long token) {
    assertThat(answer).isInstanceOf(AcquireResult.Refused.class);
    LeaseState.Held held = ((AcquireResult.Refused) answer).heldBy().orElseThrow();
    assertThat(held.holder()).isEqualTo(holder);
    assertThat(held.lastToken()).isEqualTo(token);
  }

  /**
   * A follower's batch of names held by another neither locks their rows nor waits for their
   * locks: it refuses them as its snapshot shows them while the holder's renewal of every one of
   * them is under way (rows changed, not yet committed). Were the follower to lock them, it would
   * wait for that renewal (here: until its call timeout), and a holder's renewal would wait for the
   * follower's whole batch in turn.
   */
  @Test
  void aFollowersBatchOfHeldNamesWaitsForNoRenewalUnderWay() throws Exception {
    List<String> names = names(200);
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    try (Connection renewing = PostgresServers.connect();
        PostgresLeaseStore follower = PostgresLeaseStore.builder(pool).table(table)
            .callTimeout(Duration.ofSeconds(3)).build()) {
      begin(renewing, "UPDATE $t SET expires_at = expires_at + interval '1 second'"
          + " WHERE name = ANY(?)", names);
      Map<String, AcquireResult> refused = follower.acquireOrRenewAll(names, b, TTL);
      for (String n : names) {
        assertHeldBy(refused.get(n), a, token(first, n));
      }
      renewing.rollback();
    }
  }

  /**
   * A name the follower's snapshot shows free but that another takes before the follower locks
   * its row is decided again under the lock: refused, naming the new holder and its token, and the
   * names around it are answered as before. The follower's batch then takes one statement more.
   */
  @Test
  void aNameTakenBetweenTheSnapshotAndItsLockIsDecidedAgainUnderTheLock() throws Exception {
    List<String> names = names(30);
    String taken = names.get(7);
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    HolderId c = HolderId.generate();
    Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
    exec("UPDATE $t SET expires_at = clock_timestamp() - interval '1 second'"
        + " WHERE name = '" + taken + "'"); // a's grant of it has expired
    List<String> followerSql = new CopyOnWriteArrayList<>();
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (Connection taking = PostgresServers.connect();
        Connection watching = PostgresServers.connect();
        PostgresLeaseStore follower = PostgresLeaseStore.builder(
            StatementRecorder.recording(pool, sql -> {
              if (sql != null) {
                followerSql.add(sql);
              }
            })).table(table).build()) {
      // c takes it, as its grant would: locked and changed, not yet committed
      begin(taking, "UPDATE $t SET holder = '" + c.value() + "', token = token + 1000,"
          + " expires_at = clock_timestamp() + interval '30 seconds' WHERE name = ANY(?)",
          List.of(taken));
      int takingPid = pid(taking);
      Future<Map<String, AcquireResult>> answers =
          thread.submit(() -> follower.acquireOrRenewAll(names, b, TTL));
      await().atMost(Duration.ofSeconds(30)).until(() -> blockedBy(watching, takingPid));
      taking.commit();
      Map<String, AcquireResult> refused = answers.get(30, TimeUnit.SECONDS);
      assertHeldBy(refused.get(taken), c, token(first, taken) + 1000);
      for (String n : names) {
        if (!n.equals(taken)) {
          assertHeldBy(refused.get(n), a, token(first, n));
        }
      }
      assertThat(followerSql).as("the batch, then the changed name again under its lock")
          .filteredOn(sql -> sql.contains(" k AS (")).hasSize(2);
    } finally {
      thread.shutdownNow();
    }
  }

  private static int pid(Connection c) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Whether some session waits for a lock that the session {@code pid} holds. */
  private static boolean blockedBy(Connection watching, int pid) throws Exception {
    try (PreparedStatement ps = watching.prepareStatement("SELECT count(*) FROM pg_stat_activity"
        + " WHERE ? = ANY(pg_blocking_pids(pid))")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }
}
