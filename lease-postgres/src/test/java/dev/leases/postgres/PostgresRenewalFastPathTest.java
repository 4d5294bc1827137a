package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseState;
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

    LeaseState.Held holder = ((AcquireResult.Refused) again.get(taken)).heldBy().orElseThrow();
    assertThat(holder.holder()).isEqualTo(new HolderId("someone-else"));
    assertThat(holder.lastToken()).isEqualTo(takenToken);
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
      LeaseState.Held held = ((AcquireResult.Refused) refused.get(n)).heldBy().orElseThrow();
      assertThat(held.holder()).isEqualTo(b);
      assertThat(held.lastToken()).isEqualTo(token(first, n));
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
}
