package dev.leases.redis;

import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.LocalProcessServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A dedicated local {@code redis-server} for tests that stop, crash or restart it (the shared one
 * must not be disturbed). It keeps its port across restarts, so clients reconnect to it. Needs the
 * binary: these tests never run against an external server.
 */
final class RedisProcess implements AutoCloseable {

  private final Path binary;
  private final int port;
  private final Path dir;
  private final List<String> extraArgs;
  private Process process;
  private int clusterPort;

  private RedisProcess(Path binary, int port, Path dir, List<String> extraArgs) {
    this.binary = binary;
    this.port = port;
    this.dir = dir;
    this.extraArgs = List.copyOf(extraArgs);
  }

  static RedisProcess start(String... extraArgs) throws Exception {
    return start((port, dir) -> List.of(extraArgs));
  }

  /**
   * Starts one with the arguments {@code extraArgs} makes from its port and data directory (which
   * it may fill with files the server reads, e.g. an ACL file); they come after, and so override,
   * the default arguments.
   */
  static RedisProcess start(ExtraArgs extraArgs) throws Exception {
    Path binary = LocalProcessServer.findBinary("redis-server").orElseThrow(() ->
        new IllegalStateException("this test needs a local redis-server that it can restart. "
            + RedisServers.INSTALL_HINT));
    int port = FreePorts.pick();
    Path dir = Files.createTempDirectory("leases-redis-dedicated-");
    RedisProcess p = new RedisProcess(binary, port, dir, extraArgs.of(port, dir));
    p.startProcess();
    return p;
  }

  /**
   * A node with cluster support and no slots yet. Its cluster bus gets a free port of its own
   * ({@code --cluster-port}): by default the bus is the port plus 10,000, which a free port above
   * 55,535 (a fifth of Linux's ephemeral range) cannot have, and Redis refuses to start.
   */
  static RedisProcess startClusterNode() throws Exception {
    int bus = FreePorts.pick();
    RedisProcess p = start((port, dir) -> List.of("--cluster-enabled", "yes",
        "--cluster-config-file", "nodes.conf", "--cluster-port", Integer.toString(bus)));
    p.clusterPort = bus;
    return p;
  }

  /** The cluster bus port of a {@link #startClusterNode()} node, else 0. */
  int clusterPort() {
    return clusterPort;
  }

  /** The extra arguments of a server on {@code port} with data directory {@code dir}. */
  interface ExtraArgs {
    List<String> of(int port, Path dir) throws IOException;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  int port() {
    return port;
  }

  /** SIGKILL: a crash. Without persistence every key is gone when it comes back. */
  void kill() throws InterruptedException {
    if (process != null && process.isAlive()) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** Starts it again on the same port, after {@link #kill()}. */
  void startAgain() throws Exception {
    startProcess();
  }

  private void startProcess() throws Exception {
    List<String> argv = new ArrayList<>(RedisServers.argv(binary, port, dir));
    argv.addAll(extraArgs);
    Path log = dir.resolve("server.log");
    process = new ProcessBuilder(argv).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).directory(dir.toFile())
        .start();
    if (!FreePorts.awaitListening(port, Duration.ofSeconds(30)) || !process.isAlive()) {
      String out = Files.exists(log) ? Files.readString(log) : "";
      close();
      throw new IOException("redis-server did not listen on " + port + ": " + out);
    }
  }

  @Override
  public void close() {
    try {
      kill();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }
}
