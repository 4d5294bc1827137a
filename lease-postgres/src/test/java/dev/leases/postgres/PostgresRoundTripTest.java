package dev.leases.postgres;

import static dev.leases.postgres.WireCounter.serverPort;
import static dev.leases.postgres.WireCounter.urlOnlyPool;
import static dev.leases.postgres.WireCounter.urlThrough;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.tck.servers.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a single call of a store opened by the factory (its own pool) sends, read off the wire
 * through a {@link TcpProxy}: once its statements are prepared on the connection, every call is
 * one round trip (one Sync) with no Parse, no validation query and no session statement of the
 * pool or the driver; a fresh acquire executes two statements in it, the other calls one.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresRoundTripTest {

  private static final Duration TTL = Duration.ofSeconds(30);
  /** pgjdbc prepares a statement on the server at its fifth use on a connection. */
  private static final int WARM_UP = 8;

  @Test
  void everySingleCallIsOneRoundTripOnceItsStatementsArePrepared() throws Exception {
    String table = PostgresServers.freshTable();
    try (TcpProxy proxy = new TcpProxy(serverPort());
        PostgresLeaseStore store = factoryStoreThrough(proxy, table)) {
      assertOneRoundTripPerCall(proxy, store, table, 0);
    }
  }

  /**
   * A store on the caller's pool configured as the README's example is, with nothing but its URL:
   * HikariCP then hands out connections at the server's default isolation, READ COMMITTED, and
   * puts back any other level on return. Setting READ COMMITTED before every call (as the store
   * must on a pool that may hand out another level) cost a round trip of its own per call
   * ({@code SET SESSION CHARACTERISTICS}). Each statement goes behind the one that bounds it on
   * the server ({@code set_config('statement_timeout', ..., true)}), in the same round trip.
   */
  @Test
  void everySingleCallIsOneRoundTripOnAPoolConfiguredWithOnlyItsUrl() throws Exception {
    String table = PostgresServers.freshTable();
    try (TcpProxy proxy = new TcpProxy(serverPort());
        HikariDataSource pool = urlOnlyPool(urlThrough(proxy));
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).table(table).build()) {
      assertOneRoundTripPerCall(proxy, store, table, 1);
    }
  }

  /** Each call is one round trip executing its statements and {@code bounds} more each. */
  private static void assertOneRoundTripPerCall(TcpProxy proxy, PostgresLeaseStore store,
      String table, int bounds) {
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    String base = "trip-" + UUID.randomUUID() + "-";
    for (int i = 0; i < WARM_UP; i++) {
      String name = base + "warm-" + i;
      store.acquireOrRenew(name, a, TTL).orElseThrow();
      store.acquireOrRenew(name, a, TTL).orElseThrow();
      assertThat(store.acquireOrRenew(name, b, TTL)).isEmpty();
      assertThat(store.release(name, a)).isTrue();
    }
    String name = base + "measured";
    WireCounter wire = new WireCounter(proxy, table);
    store.acquireOrRenew(name, a, TTL).orElseThrow();
    assertCalls(wire.look(), "a fresh acquire", new WireCounter.Calls(1, 2 + bounds, 0));
    store.acquireOrRenew(name, a, TTL).orElseThrow();
    assertCalls(wire.look(), "a renewal", new WireCounter.Calls(1, 1 + bounds, 0));
    assertThat(store.acquireOrRenew(name, b, TTL)).isEmpty();
    assertCalls(wire.look(), "a contended miss", new WireCounter.Calls(1, 1 + bounds, 0));
    assertThat(store.release(name, a)).isTrue();
    assertCalls(wire.look(), "a release", new WireCounter.Calls(1, 1 + bounds, 0));
  }

  private static void assertCalls(WireCounter.Look sent, String call, WireCounter.Calls expected) {
    assertThat(sent.calls()).as("%s; sent %s as %s", call, sent.sql(), sent.messages())
        .isEqualTo(expected);
  }

  /**
   * The factory's pool makes its sessions' commits durable once, when it connects (where the
   * server's {@code synchronous_commit} is off), so that no write raises it again per transaction
   * (the statements' own raise stays, for sessions where a setting does not stick).
   */
  @Test
  void theFactorysSessionsRaiseSynchronousCommitOnceWhenTheyConnect() throws Exception {
    try (TcpProxy proxy = new TcpProxy(serverPort());
        PostgresLeaseStore store = factoryStoreThrough(proxy, PostgresServers.freshTable())) {
      store.acquireOrRenew("durable-" + UUID.randomUUID(), HolderId.generate(), TTL).orElseThrow();
      List<String> sql = proxy.clientBytes().stream().map(PgWire::parse)
          .flatMap(w -> w.sql().stream()).toList();
      assertThat(sql).as("what the factory's pool and store sent")
          .anySatisfy(s -> assertThat(s)
              .contains("set_config('synchronous_commit', 'on', false)")
              .contains("statement_timeout"));
    }
  }

  /** A store opened by the factory (its own pool) whose connections go through {@code proxy}. */
  private static PostgresLeaseStore factoryStoreThrough(TcpProxy proxy, String table) {
    return new PostgresLeaseStoreFactory().open(Map.of(PostgresLeaseStoreFactory.JDBC_URL,
        urlThrough(proxy), PostgresLeaseStoreFactory.TABLE, table));
  }
}
