package dev.leases.consul;

import dev.leases.tck.servers.FreePorts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dedicated local Consul agent for tests that disturb it (stop, restart, pause) or need another
 * configuration: a dev agent, or a single server with a data directory that survives
 * {@link #restart()}. Ports are chosen once, so a restarted server keeps its Raft address. Output
 * goes to {@code consul.log} in the work directory.
 */
final class ConsulProcess implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(ConsulProcess.class);

  private final List<String> argv;
  private final Path dir;
  private final int httpPort;
  private Process process;

  private ConsulProcess(List<String> argv, Path dir, int httpPort) {
    this.argv = argv;
    this.dir = dir;
    this.httpPort = httpPort;
  }

  /**
   * A dev agent (state in memory); {@code lowTtlMin} lowers session_ttl_min to 1s; each of
   * {@code hcl} is passed as an extra {@code -hcl} configuration fragment.
   */
  static ConsulProcess devAgent(boolean lowTtlMin, String... hcl)
      throws IOException, InterruptedException {
    int port = FreePorts.pick();
    Path dir = Files.createTempDirectory("leases-consul-dev-");
    List<String> argv = new ArrayList<>(ConsulServers.devAgentArgv(binary(), port, lowTtlMin));
    for (String h : hcl) {
      argv.add("-hcl");
      argv.add(h);
    }
    ConsulProcess p = new ConsulProcess(List.copyOf(argv), dir, port);
    p.start();
    return p;
  }

  /** A single server that keeps its Raft log and snapshots in a data directory. */
  static ConsulProcess persistentServer() throws IOException, InterruptedException {
    int port = FreePorts.pick();
    Path dir = Files.createTempDirectory("leases-consul-server-");
    List<String> argv = new ArrayList<>(List.of(binary().toString(), "agent", "-server",
        "-bootstrap-expect", "1", "-data-dir", dir.resolve("data").toString(),
        "-node", "leases-restart-" + port));
    argv.addAll(ConsulServers.commonArgs(port));
    argv.addAll(List.of("-hcl", "session_ttl_min = \"1s\"",
        "-hcl", "performance { raft_multiplier = 1 }"));
    ConsulProcess p = new ConsulProcess(List.copyOf(argv), dir, port);
    p.start();
    return p;
  }

  private static Path binary() {
    return ConsulServers.localBinary().orElseThrow(() -> new IllegalStateException(
        "no local consul binary for a dedicated agent. " + ConsulServers.INSTALL_HINT));
  }

  String url() {
    return "http://127.0.0.1:" + httpPort;
  }

  int httpPort() {
    return httpPort;
  }

  private void start() throws IOException, InterruptedException {
    process = new ProcessBuilder(argv).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("consul.log").toFile()))
        .directory(dir.toFile()).start();
    try {
      if (!FreePorts.awaitListening(httpPort, Duration.ofSeconds(60)) || !process.isAlive()) {
        throw new IOException("consul did not listen on " + httpPort + ": " + log());
      }
      ConsulServers.awaitLeader(url(), Duration.ofSeconds(60));
    } catch (IOException | RuntimeException e) {
      stop();
      throw new IllegalStateException("consul did not come up: " + e.getMessage() + "\n" + log(), e);
    }
  }

  /** Stops the agent (SIGTERM, then SIGKILL) and waits for it to exit. */
  void stop() {
    if (process == null) {
      return;
    }
    signal("CONT"); // a stopped process does not handle SIGTERM
    process.destroy();
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  /** Stops the agent and starts it again with the same ports and data directory. */
  void restart() throws IOException, InterruptedException {
    long begin = System.nanoTime();
    stop();
    start();
    logger.info("restarted consul on {}: leader and node registered after {} ms", url(),
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin));
  }

  /** {@code SIGSTOP}: the agent keeps its sockets open but answers nothing. */
  void pause() {
    signal("STOP");
  }

  /** {@code SIGCONT}. */
  void resume() {
    signal("CONT");
  }

  private void signal(String sig) {
    if (process == null) {
      return;
    }
    try {
      new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start()
          .waitFor(10, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new IllegalStateException("cannot send SIG" + sig, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private String log() {
    try {
      String s = Files.readString(dir.resolve("consul.log"));
      return s.length() <= 4000 ? s : s.substring(s.length() - 4000);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() {
    stop();
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temp directory left behind is not a test failure
    }
  }
}
