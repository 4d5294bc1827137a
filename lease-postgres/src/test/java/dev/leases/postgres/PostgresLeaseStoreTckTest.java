package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.Map;

/**
 * The compatibility kit against PostgreSQL: the embedded server by default, or the one at
 * {@code $LEASES_POSTGRES_URL}. Every client (and the child JVMs) opens its own pool through
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
  protected void deleteOutOfBand(String name) throws Exception {
    try (Connection c = PostgresServers.connect();
        PreparedStatement ps = c.prepareStatement("DELETE FROM leases WHERE name = ?")) {
      ps.setString(1, name);
      assertThat(ps.executeUpdate()).as("rows deleted for %s", name).isEqualTo(1);
    }
  }
}
