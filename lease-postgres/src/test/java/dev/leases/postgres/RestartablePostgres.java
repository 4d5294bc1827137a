package dev.leases.postgres;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.function.Consumer;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * An embedded PostgreSQL (a dedicated one, or the module's shared one) that a test can crash and
 * restart on the same data directory and port: {@link #crash()} sends the postmaster SIGQUIT, which is what {@code pg_ctl stop -m
 * immediate} does (no checkpoint, crash recovery on the next start). {@code synchronous_commit} is
 * on, as in a default server, so a commit the client saw survives.
 */
final class RestartablePostgres implements AutoCloseable {

  private final Path dataDir;
  private final Map<String, String> config;
  private final Consumer<Path> customizer;
  private int port;
  private EmbeddedPostgres server;

  private RestartablePostgres(Path dataDir, Map<String, String> config, Consumer<Path> customizer) {
    this.dataDir = dataDir;
    this.config = Map.copyOf(config);
    this.customizer = customizer;
  }

  static RestartablePostgres start() throws IOException {
    return start(Map.of(), dir -> {});
  }

  /**
   * A server with extra {@code postgresql.conf} settings ({@code -c key=value}), whose data
   * directory {@code customizer} may change (e.g. its {@code pg_hba.conf}) before every start.
   */
  static RestartablePostgres start(Map<String, String> config, Consumer<Path> customizer)
      throws IOException {
    RestartablePostgres p = new RestartablePostgres(
        Files.createTempDirectory("leases-pg-restart-"), config, customizer);
    p.startServer();
    return p;
  }

  String url() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** Stops the server in immediate mode and waits until the postmaster has exited. */
  void crash() throws IOException, InterruptedException {
    long pid = Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).trim());
    Process kill = new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill -QUIT " + pid + " failed");
    }
    ProcessHandle handle = ProcessHandle.of(pid).orElse(null);
    if (handle != null) {
      try {
        handle.onExit().get(30, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IOException("postmaster " + pid + " did not exit after SIGQUIT", e);
      }
    }
    EmbeddedPostgres crashed = server;
    server = null;
    try {
      crashed.close(); // its pg_ctl stop fails (already down) and is logged; releases the dir lock
    } catch (IOException | RuntimeException e) {
      // expected: nothing to stop
    }
  }

  /** Starts the server again on the same data directory and port (crash recovery runs). */
  void restart() throws IOException {
    startServer();
  }

  private void startServer() throws IOException {
    EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
        .setDataDirectory(dataDir)
        .setCleanDataDirectory(false)
        .setPGStartupWait(Duration.ofSeconds(60))
        .setServerConfig("synchronous_commit", "on")
        .setDataDirectoryCustomizer(dir -> customizer.accept(dir.toPath()));
    config.forEach(b::setServerConfig);
    if (port != 0) {
      b.setPort(port);
    }
    server = b.start();
    port = server.getPort();
  }

  @Override
  public void close() throws IOException {
    if (server != null) {
      server.close();
      server = null;
    }
    try (Stream<Path> walk = Files.walk(dataDir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
