package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;

/**
 * The compatibility kit against PostgreSQL: the embedded server by default, or the one at
 * {@code $LEASES_POSTGRES_URL} (then the restart scenario needs the cluster of
 * {@code scripts/start-external-postgres.sh}). A {@code DELETE} by hand sends no NOTIFY, so the kit
 * expects no hint for it. Every client (and the child JVMs) opens its own pool through
 * {@link PostgresLeaseStoreFactory} from {@link #settings()}, as separate processes would;
 * subclasses run the whole kit with other settings (a least-privilege role, TLS).
 */
class PostgresLeaseStoreTckTest extends LeaseStoreTck {

  /** The factory settings every client of this run opens its store with. */
  protected Map<String, String> settings() {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, PostgresServers.url());
  }

  /** The lease table those settings name. */
  protected String table() {
    return PostgresLeaseStore.DEFAULT_TABLE;
  }

  /** The URL of a role that may delete lease rows behind the store's back. */
  protected String adminUrl() {
    return PostgresServers.url();
  }

  @Override
  protected LeaseStore newStore() {
    return new PostgresLeaseStoreFactory().open(settings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(PostgresLeaseStoreFactory.class, settings());
  }

  private String url() {
    return settings().get(PostgresLeaseStoreFactory.JDBC_URL);
  }

  @Override
  protected int storePort() {
    return java.net.URI.create(url().substring("jdbc:".length())).getPort();
  }

  /**
   * A store on a pool of its own through {@code port} (the URL, table, {@code createTable} and
   * password file of {@link #settings()}); closing the store closes the pool.
   */
  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    Map<String, String> s = settings();
    String via = url().replaceFirst(":" + storePort() + "/", ":" + port + "/");
    HikariDataSource pool = PostgresServers.pool(via, 2, config -> {
      config.setConnectionTimeout(callTimeout.toMillis() + 250);
      String file = s.get(PostgresLeaseStoreFactory.PASSWORD_FILE);
      if (file != null) {
        try {
          config.setPassword(Files.readString(Path.of(file)).strip());
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    });
    LeaseStore store = PostgresLeaseStore.builder(pool).callTimeout(callTimeout).table(table())
        .createTable(!"false".equals(s.get(PostgresLeaseStoreFactory.CREATE_TABLE))).build();
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
    try (Connection c = admin();
        PreparedStatement ps = c.prepareStatement("DELETE FROM " + table() + " WHERE name = ?")) {
      ps.setString(1, name);
      assertThat(ps.executeUpdate()).as("rows deleted for %s", name).isEqualTo(1);
    }
  }

  private Connection admin() throws SQLException {
    return DriverManager.getConnection(adminUrl());
  }
}
