package dev.leases.tck.servers;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server binary started on a free loopback port with a throw-away data directory; closing it
 * kills the process and deletes the directory. Its output goes to {@code server.log} in that
 * directory (quoted in the error when it does not come up). {@link #restart} crashes it and starts
 * the same command again on the same port and data directory, so that clients reconnect to it.
 */
public final class LocalProcessServer implements TestServer {

  private static final Logger log = LoggerFactory.getLogger(LocalProcessServer.class);

  private final String product;
  private final List<String> argv;
  private final Path dataDir;
  private final String endpoint;
  private final int port;
  private volatile Process process;

  private LocalProcessServer(String product, List<String> argv, Process process, Path dataDir,
      String endpoint, int port) {
    this.product = product;
    this.argv = List.copyOf(argv);
    this.process = process;
    this.dataDir = dataDir;
    this.endpoint = endpoint;
    this.port = port;
  }

  /** Finds {@code binary} on the PATH (or as an absolute path). */
  public static Optional<Path> findBinary(String binary) {
    if (binary.contains("/")) {
      Path p = Path.of(binary);
      return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
    }
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      Path p = Path.of(dir, binary);
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /** What a launcher needs to start one server. */
  public interface Command {
    /** The command line, given the chosen port and a fresh data directory. */
    List<String> argv(int port, Path dataDir);
  }

  /**
   * Starts {@code command} and waits until it listens on its port.
   *
   * @param endpoint builds the endpoint from the port
   */
  public static LocalProcessServer start(String product, Command command,
      Function<Integer, String> endpoint, Duration startTimeout) throws IOException,
      InterruptedException {
    int port = FreePorts.pick();
    Path dir = Files.createTempDirectory("leases-" + product.toLowerCase().replace(' ', '-') + "-");
    List<String> argv = new ArrayList<>(command.argv(port, dir));
    LocalProcessServer server = new LocalProcessServer(product, argv, launch(argv, dir), dir,
        endpoint.apply(port), port);
    server.awaitUp(startTimeout);
    return server;
  }

  private static Process launch(List<String> argv, Path dir) throws IOException {
    return new ProcessBuilder(argv)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()))
        .directory(dir.toFile())
        .start();
  }

  private void awaitUp(Duration startTimeout) throws IOException, InterruptedException {
    if (!FreePorts.awaitListening(port, startTimeout) || !process.isAlive()) {
      Path log = dataDir.resolve("server.log");
      String out = Files.exists(log) ? Files.readString(log) : "";
      close();
      throw new IOException(product + " did not listen on port " + port + " within " + startTimeout
          + "; command " + argv + "; output:\n" + tail(out));
    }
  }

  /**
   * Crashes the server ({@code SIGKILL}: no shutdown work, whatever it had not made durable is
   * gone) and starts the same command again, on the same port and data directory; returns once it
   * listens. A server without persistence comes back empty; one with a data directory recovers from
   * it. Clients see their connections drop and must reconnect. If it does not come back within
   * {@code startTimeout}, it is closed (data deleted) and this throws with its output.
   */
  public synchronized void restart(Duration startTimeout) throws IOException,
      InterruptedException {
    long start = System.nanoTime();
    Process old = process;
    old.destroyForcibly();
    if (!old.waitFor(30, TimeUnit.SECONDS)) {
      throw new IOException(product + " pid " + old.pid() + " did not exit after SIGKILL");
    }
    process = launch(argv, dataDir);
    awaitUp(startTimeout);
    log.info("{}: crashed pid {} and restarted as pid {} on port {}, listening after {} ms", product,
        old.pid(), process.pid(), port, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
  }

  private static String tail(String s) {
    return s.length() <= 4000 ? s : s.substring(s.length() - 4000);
  }

  /** The loopback port it listens on. */
  public int port() {
    return port;
  }

  /** The current process's id (a new one after {@link #restart}). */
  public long pid() {
    return process.pid();
  }

  /** Its data directory, removed on close. */
  public Path dataDir() {
    return dataDir;
  }

  @Override
  public String endpoint() {
    return endpoint;
  }

  @Override
  public String description() {
    return product + " pid " + process.pid() + " on 127.0.0.1:" + port + " (data " + dataDir + ")";
  }

  @Override
  public void close() {
    Process process = this.process;
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    deleteRecursively(dataDir);
  }

  static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort: a temp directory left behind is not a test failure
    }
  }
}
