package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.TcpProxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * On a pool the library owns (the factory's: autocommit, READ COMMITTED, the session's statement
 * timeout set) the store sets the socket timeout on the driver's connection only when it differs,
 * instead of twice per call (once by the store, once by the pool putting back its own on return).
 * The bound must still hold whatever reset the timeout while the connection sat in the pool.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresOwnPoolNetworkTimeoutTest {

  private static final Duration CALL_TIMEOUT = Duration.ofMillis(500);
  private static final int BOUND_MS = (int) CALL_TIMEOUT.plus(Jdbc.NETWORK_GRACE).toMillis();
  private static final Duration TTL = Duration.ofSeconds(5);

  /** A pool configured as the factory configures its own, on {@code url}, of one connection. */
  private static HikariDataSource ownPool(String url) {
    return PostgresServers.pool(url, 1, config -> {
      config.setAutoCommit(true);
      config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
      config.setConnectionInitSql("SELECT set_config('statement_timeout', '"
          + CALL_TIMEOUT.toMillis() + "', false)");
    });
  }

  private static PostgresLeaseStore store(HikariDataSource pool) {
    return PostgresLeaseStore.builder(pool).callTimeout(CALL_TIMEOUT).poolBoundsStatements()
        .closeWithStore(pool).build();
  }

  @Test
  void theConnectionKeepsTheBoundWhileItSitsInTheLibrarysOwnPool() throws Exception {
    try (HikariDataSource pool = ownPool(PostgresServers.url());
        PostgresLeaseStore store = store(pool)) {
      store.acquireOrRenew("own-pool-" + UUID.randomUUID(), HolderId.generate(), TTL);
      try (Connection c = pool.getConnection()) {
        // before: the store set it through the pool's proxy, which put back its own (0) on return
        assertThat(c.unwrap(Connection.class).getNetworkTimeout())
            .as("the socket timeout of the pool's idle connection after a store call")
            .isEqualTo(BOUND_MS);
      }
    }
  }

  @Test
  void aCallIsBoundedWhenTheTimeoutWasResetWhileTheConnectionSatInThePool() throws Exception {
    String url = PostgresServers.url();
    int port = Integer.parseInt(url.replaceFirst("^jdbc:postgresql://[^:/]+:(\\d+)/.*$", "$1"));
    try (TcpProxy proxy = new TcpProxy(port);
        HikariDataSource pool = ownPool(url.replaceFirst(":" + port + "/", ":" + proxy.port() + "/"));
        PostgresLeaseStore store = store(pool)) {
      String name = "own-pool-" + UUID.randomUUID();
      HolderId holder = HolderId.generate();
      store.acquireOrRenew(name, holder, TTL); // the bound is set on the connection
      try (Connection c = pool.getConnection()) {
        c.unwrap(Connection.class).setNetworkTimeout(Jdbc.DIRECT, 0); // as a reset would: no bound
      }
      proxy.stall();
      try {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () ->
            assertThatThrownBy(() -> store.acquireOrRenew(name, holder, TTL))
                .isInstanceOf(LeaseStoreUnavailableException.class));
      } finally {
        proxy.forward();
      }
    }
  }
}
