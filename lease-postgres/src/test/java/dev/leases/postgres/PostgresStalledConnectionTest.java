package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.TcpProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every call the library makes is bounded, also on connections it does not own: a {@link TcpProxy}
 * in stall mode between the driver and the server keeps the connection open and moves no bytes, as
 * a silent network partition does. "Within its bound" is checked against a generous limit that
 * separates failing on our timeouts (about a second here) from hanging.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresStalledConnectionTest {

  private static final Duration CALL_TIMEOUT = Duration.ofMillis(500);
  private static final Duration HANG = Duration.ofSeconds(30);
  /**
   * Limit for a call whose bound is the call timeout plus the network grace (1.5 s), with room for
   * a loaded machine, and well below the 10 s for which pgjdbc waits for a cancel request it sent
   * through a stalled network.
   */
  private static final Duration WELL_WITHIN_CANCEL_WAIT = Duration.ofSeconds(6);
  private static final Duration TTL = Duration.ofSeconds(5);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private TcpProxy proxy;
  private String proxiedUrl;

  @BeforeEach
  void startProxy() throws Exception {
    String url = PostgresServers.url(); // jdbc:postgresql://127.0.0.1:<port>/postgres?user=...
    int port = Integer.parseInt(url.replaceFirst("^jdbc:postgresql://[^:/]+:(\\d+)/.*$", "$1"));
    proxy = closeLater(new TcpProxy(port));
    proxiedUrl = url.replaceFirst(":" + port + "/", ":" + proxy.port() + "/");
  }

  @AfterEach
  void closeAll() throws Exception {
    proxy.forward();
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  @Test
  void acquireOnAStalledCallerConnectionThrowsWithinItsBound() throws Exception {
    HikariDataSource direct = closeLater(PostgresServers.pool(2));
    PostgresLeaseStore store = closeLater(PostgresLeaseStore.builder(direct)
        .callTimeout(CALL_TIMEOUT).build());
    String name = "stall-" + UUID.randomUUID();
    store.inspect(name); // creates the table on the direct pool
    Connection caller = closeLater(DriverManager.getConnection(proxiedUrl));
    caller.setAutoCommit(false);
    try (Statement s = caller.createStatement()) {
      s.execute("SELECT 1"); // the session is up before the stall
    }
    proxy.stall();
    assertTimeoutPreemptively(HANG, () ->
        assertThatThrownBy(() -> store.acquireOrRenew(caller, name, HolderId.generate(), TTL))
            .isInstanceOf(LeaseStoreUnavailableException.class));
  }

  @Test
  void aFencedWritesCommitOnAStalledConnectionFailsWithinItsBound() throws Exception {
    withFenceThroughProxy((fence, resource) -> {
      fence.highestToken(resource); // creates the table while the proxy forwards
      assertTimeoutPreemptively(HANG, () ->
          assertThatThrownBy(() -> fence.write(resource, 1, c -> {
            proxy.stall(); // the work is done; the commit is the fence's to bound
            return 1;
          }))
              .isInstanceOf(LeaseStoreUnavailableException.class)
              .hasMessageContaining("the commit")
              .hasMessageContaining("outcome is unknown"));
    });
  }

  /**
   * The fence's own statement stalls: the call must fail within the call timeout plus the network
   * grace (1.5 s here). Bounded by pgjdbc's query timeout, it failed after 10.5 s: the driver's
   * timer sends its cancel request through the same stalled network and the statement waits for
   * that request for up to the driver's {@code cancelSignalTimeout} (10 s), while the timer, which
   * the driver shares across all its connections, is held up for every other statement.
   */
  @Test
  void aFencedWriteWhoseFenceStatementStallsFailsWithinItsBound() throws Exception {
    withFenceThroughProxy((fence, resource) -> {
      fence.write(resource, 1, c -> 1); // creates the table and opens the connection
      proxy.stall();
      assertTimeoutPreemptively(WELL_WITHIN_CANCEL_WAIT, () ->
          assertThatThrownBy(() -> fence.write(resource, 2, c -> 1))
              .isInstanceOf(LeaseStoreUnavailableException.class)
              .hasMessageContaining("nothing was written"));
    });
  }

  /**
   * The network stalls under the caller's open transaction: the fenced write must fail within its
   * bound, its checks of the connection (a round trip to ask the isolation level) included. With
   * the checks outside the bound it hung until the test's limit.
   */
  @Test
  void aFencedWriteInTheCallersStalledTransactionFailsWithinItsBound() throws Exception {
    HikariDataSource direct = closeLater(PostgresServers.pool(2));
    String table = PostgresServers.freshTable();
    JdbcFence fence = JdbcFence.builder(direct).table(table).callTimeout(CALL_TIMEOUT).build();
    String resource = "stall-" + UUID.randomUUID();
    // The caller's own socket timeout, longer than the limit, only keeps a failing run from hanging
    // the test JVM: the fence must bound its reads with its own.
    Connection caller = DriverManager.getConnection(proxiedUrl + "&socketTimeout=20");
    try {
      fence.highestToken(resource); // creates the table on the direct pool
      caller.setAutoCommit(false);
      try (Statement s = caller.createStatement()) {
        s.execute("SELECT 1"); // the session is up before the stall
      }
      proxy.stall();
      assertTimeoutPreemptively(WELL_WITHIN_CANCEL_WAIT, () ->
          assertThatThrownBy(() -> fence.write(caller, resource, 1, c -> 1))
              .isInstanceOf(LeaseStoreUnavailableException.class));
    } finally {
      proxy.forward();
      caller.abort(Runnable::run); // its transaction may hold the table (a failing run's write)
      PostgresServers.exec("DROP TABLE IF EXISTS " + table);
    }
  }

  /** A run's begin stalls in its statements: it must fail within its bound, as the fence must. */
  @Test
  void aRunsBeginWhoseStatementsStallFailsWithinItsBound() throws Exception {
    HikariDataSource proxied = closeLater(PostgresServers.pool(proxiedUrl, 1, config -> {}));
    String table = PostgresServers.freshTable();
    String fenceTable = PostgresServers.freshTable();
    JdbcRunLedger ledger = JdbcRunLedger.builder(proxied).table(table).fenceTable(fenceTable)
        .callTimeout(CALL_TIMEOUT).build();
    String job = "stall-" + UUID.randomUUID();
    HolderId holder = HolderId.generate();
    try {
      ledger.begin(job, "first", 1, holder); // creates the tables and opens the connection
      proxy.stall();
      assertTimeoutPreemptively(WELL_WITHIN_CANCEL_WAIT, () ->
          assertThatThrownBy(() -> ledger.begin(job, "second", 2, holder))
              .isInstanceOf(LeaseStoreUnavailableException.class));
    } finally {
      proxy.forward();
      PostgresServers.exec("DROP TABLE IF EXISTS " + table + ", " + fenceTable);
    }
  }

  /** A scenario on a fence and a resource of it. */
  private interface FenceScenario {
    void run(JdbcFence fence, String resource) throws Exception;
  }

  /**
   * Runs {@code scenario} on a fence of a fresh table whose pool's one connection goes through the
   * proxy, then lets the proxy forward again and drops the table.
   */
  private void withFenceThroughProxy(FenceScenario scenario) throws Exception {
    HikariDataSource proxied = closeLater(PostgresServers.pool(proxiedUrl, 1, config -> {}));
    String table = PostgresServers.freshTable();
    JdbcFence fence = JdbcFence.builder(proxied).table(table).callTimeout(CALL_TIMEOUT).build();
    try {
      scenario.run(fence, "stall-" + UUID.randomUUID());
    } finally {
      proxy.forward();
      PostgresServers.exec("DROP TABLE IF EXISTS " + table);
    }
  }

  /** The LISTEN connection stalls while it logs in: closing the store must still end its thread. */
  @Test
  void closingAStoreWhoseListenConnectionStallsWhileConnectingEndsItsThread() throws Exception {
    closingAStoreWithAStalledListenConnectionEndsItsThread(true);
  }

  /** The LISTEN connection stalls once it listens: closing the store must end its thread. */
  @Test
  void closingAStoreWhoseListenConnectionStallsWhileListeningEndsItsThread() throws Exception {
    closingAStoreWithAStalledListenConnectionEndsItsThread(false);
  }

  private void closingAStoreWithAStalledListenConnectionEndsItsThread(boolean stallFirst)
      throws Exception {
    HikariDataSource proxied = closeLater(PostgresServers.pool(proxiedUrl, 1, config -> {}));
    // a channel of its own, so that the thread's name is this store's
    String table = PostgresServers.freshTable();
    PostgresLeaseStore store = PostgresLeaseStore.builder(proxied).table(table)
        .callTimeout(CALL_TIMEOUT).build();
    String threadName = "leases-postgres-listen-" + table + "_released";
    if (stallFirst) {
      proxy.stall();
    }
    store.onRelease("x", () -> {}); // starts the LISTEN thread; waits at most the call timeout
    assertThat(listenThreads(threadName)).as("the LISTEN thread runs").hasSize(1);
    proxy.stall();
    assertTimeoutPreemptively(HANG, store::close);
    assertThat(listenThreads(threadName)).as("LISTEN threads left after close").isEmpty();
  }

  private static List<Thread> listenThreads(String name) {
    List<Thread> out = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals(name) && t.isAlive()) {
        out.add(t);
      }
    }
    return out;
  }
}
