package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Map;

/**
 * The compatibility kit against PostgreSQL: the embedded server by default, or the one at
 * {@code $LEASES_POSTGRES_URL} (then the restart scenario needs the cluster of
 * {@code scripts/start-external-postgres.sh}). A {@code DELETE} by hand sends no NOTIFY, so the kit
 * expects no hint for it. Every client (and the child JVMs) opens its own pool through
 * {@link PostgresLeaseStoreFactory}, as separate processes would.
 */
class PostgresLeaseStoreTckTest extends LeaseStoreTck {

  private static Map<String, String> settings() {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, PostgresServers.url());
  }

  @Override
  protected LeaseStore newStore() {
    return new PostgresLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(PostgresLeaseStoreFactory.class, settings());
  }

  @Override
  protected int storePort() {
    return java.net.URI.create(PostgresServers.url().substring("jdbc:".length())).getPort();
  }

  /** A store on its own pool through {@code port}; closing the store closes the pool. */
  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    String url = PostgresServers.url().replaceFirst(":" + storePort() + "/", ":" + port + "/");
    HikariDataSource pool = PostgresServers.pool(url, 2,
        config -> config.setConnectionTimeout(callTimeout.toMillis() + 250));
    LeaseStore store = PostgresLeaseStore.builder(pool).callTimeout(callTimeout).build();
    return new ForwardingLeaseStore(store) {
      @Override
      public void close() {
        super.close();
        pool.close();
      }
    };
  }

  /**
   * A crash restart of the shared server on its data directory (see
   * {@link PostgresServers#restartShared}); the sequence that issues tokens survives it.
   */
  @Override
  protected void restartStore() throws Exception {
    PostgresServers.restartShared();
  }

  @Override
  protected void deleteOutOfBand(String name) throws Exception {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement("DELETE FROM leases WHERE name = ?")) {
      ps.setString(1, name);
      assertThat(ps.executeUpdate()).as("rows deleted for %s", name).isEqualTo(1);
    }
  }
}
