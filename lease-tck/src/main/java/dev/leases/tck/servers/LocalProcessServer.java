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

/**
 * A server binary started on a free loopback port with a throw-away data directory; closing it
 * kills the process and deletes the directory. Its output goes to {@code server.log} in that
 * directory (quoted in the error when it does not come up).
 */
public final class LocalProcessServer implements TestServer {

  private final Process process;
  private final Path dataDir;
  private final String endpoint;
  private final String description;
  private final int port;

  private LocalProcessServer(Process process, Path dataDir, String endpoint, String description,
      int port) {
    this.process = process;
    this.dataDir = dataDir;
    this.endpoint = endpoint;
    this.description = description;
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
    Path log = dir.resolve("server.log");
    Process p = new ProcessBuilder(argv)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .directory(dir.toFile())
        .start();
    LocalProcessServer server = new LocalProcessServer(p, dir, endpoint.apply(port),
        product + " pid " + p.pid() + " on 127.0.0.1:" + port + " (data " + dir + ")", port);
    if (!FreePorts.awaitListening(port, startTimeout) || !p.isAlive()) {
      String out = Files.exists(log) ? Files.readString(log) : "";
      server.close();
      throw new IOException(product + " did not listen on port " + port + " within " + startTimeout
          + "; command " + argv + "; output:\n" + tail(out));
    }
    return server;
  }

  private static String tail(String s) {
    return s.length() <= 4000 ? s : s.substring(s.length() - 4000);
  }

  public int port() {
    return port;
  }

  public long pid() {
    return process.pid();
  }

  public Path dataDir() {
    return dataDir;
  }

  @Override
  public String endpoint() {
    return endpoint;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public void close() {
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
