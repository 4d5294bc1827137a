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
  /** Set for {@link #secureServer}: how its readiness probe connects. */
  private final SecureProbe secure;
  private Process process;

  private ConsulProcess(List<String> argv, Path dir, int httpPort) {
    this(argv, dir, httpPort, null);
  }

  private ConsulProcess(List<String> argv, Path dir, int httpPort, SecureProbe secure) {
    this.argv = argv;
    this.dir = dir;
    this.httpPort = httpPort;
    this.secure = secure;
  }

  /** The management token and client TLS a secure server's readiness probe uses. */
  private record SecureProbe(String managementToken, javax.net.ssl.SSLContext ssl) {}

  /**
   * A single server with a data directory (as {@link #persistentServer()}) that serves only HTTPS
   * ({@code ports { https = N, http = -1 }}) with {@code certs}' server certificate, demands client
   * certificates of {@code certs}' authority when {@code verifyIncoming}, and enforces ACLs
   * ({@code default_policy = "deny"}, {@code managementToken} as {@code initial_management}).
   */
  static ConsulProcess secureServer(dev.leases.tck.servers.TestCertificates certs,
      String managementToken, boolean verifyIncoming) throws IOException, InterruptedException {
    int port = FreePorts.pick();
    Path dir = Files.createTempDirectory("leases-consul-secure-");
    List<String> argv = new ArrayList<>(List.of(binary().toString(), "agent", "-server",
        "-bootstrap-expect", "1", "-data-dir", dir.resolve("data").toString(),
        "-node", "leases-secure-" + port));
    List<String> common = new ArrayList<>(ConsulServers.commonArgs(port));
    common.set(common.indexOf("-http-port") + 1, "-1");
    common.set(common.indexOf("ports { https = -1 }"), "ports { https = " + port + " }");
    argv.addAll(common);
    argv.addAll(List.of("-hcl", "session_ttl_min = \"1s\"",
        "-hcl", "performance { raft_multiplier = 1 }",
        "-hcl", "acl { enabled = true\n default_policy = \"deny\"\n"
            + " tokens { initial_management = \"" + managementToken + "\" } }",
        "-hcl", "tls { defaults { ca_file = \"" + certs.ca() + "\"\n cert_file = \""
            + certs.serverCert() + "\"\n key_file = \"" + certs.serverKey() + "\"\n"
            + " verify_incoming = " + verifyIncoming + " } }"));
    javax.net.ssl.SSLContext ssl = new ConsulTls(certs.ca(), certs.clientCert(), certs.clientKey())
        .load().ssl();
    ConsulProcess p = new ConsulProcess(List.copyOf(argv), dir, port,
        new SecureProbe(managementToken, ssl));
    p.start();
    return p;
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
    return (secure != null ? "https" : "http") + "://127.0.0.1:" + httpPort;
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
      if (secure != null) {
        awaitSecureLeader(Duration.ofSeconds(60));
      } else {
        ConsulServers.awaitLeader(url(), Duration.ofSeconds(60));
      }
    } catch (IOException | RuntimeException e) {
      stop();
      throw new IllegalStateException("consul did not come up: " + e.getMessage() + "\n" + log(), e);
    }
  }

  /**
   * As {@link ConsulServers#awaitLeader}, over HTTPS with the management token: a leader, and the
   * agent's node in the catalog (sessions need it).
   */
  private void awaitSecureLeader(Duration timeout) throws IOException, InterruptedException {
    java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().sslContext(secure.ssl())
        .connectTimeout(Duration.ofSeconds(1)).build();
    long end = System.nanoTime() + timeout.toNanos();
    String last = "";
    for (String path : List.of("/v1/status/leader", "/v1/catalog/nodes")) {
      while (true) {
        try {
          var r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url() + path))
              .header("X-Consul-Token", secure.managementToken()).timeout(Duration.ofSeconds(2))
              .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
          last = r.statusCode() + " " + r.body();
          if (r.statusCode() == 200 && (path.endsWith("leader") ? r.body().trim().length() > 2
              : r.body().contains("\"Node\""))) {
            break;
          }
        } catch (IOException e) {
          last = e.toString();
        }
        if (System.nanoTime() - end > 0) {
          throw new IOException("Consul at " + url() + path + " was not ready within " + timeout
              + ": " + last);
        }
        Thread.sleep(100);
      }
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
