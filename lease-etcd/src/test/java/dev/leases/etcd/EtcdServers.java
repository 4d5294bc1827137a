package dev.leases.etcd;

import dev.leases.tck.servers.ContainerLauncher;
import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import dev.leases.tck.servers.ServerSpec;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd server the tests share: {@code $LEASES_ETCD_ENDPOINTS} (comma-separated
 * {@code http://host:port}), else a local {@code etcd} binary (Debian's {@code etcd-server}) on free
 * loopback ports with a throw-away data directory, else {@code quay.io/coreos/etcd} when a Docker
 * engine answers, else a failure that says how to get one. One server per test JVM, stopped at JVM
 * exit; test classes isolate themselves with their own key prefixes and random lease names.
 *
 * <p>The local server runs with a 50 ms heartbeat and a 500 ms election timeout, so that its minimum
 * lease TTL is 1 s (with etcd's defaults it is 2 s).
 */
public final class EtcdServers {

  public static final String ENV_VAR = "LEASES_ETCD_ENDPOINTS";
  public static final String INSTALL_HINT = "Install etcd: apt-get install -y etcd-server, or set "
      + ENV_VAR + "=http://127.0.0.1:2379";
  static final String IMAGE = "quay.io/coreos/etcd:v3.5.17";

  private static final Logger log = LoggerFactory.getLogger(EtcdServers.class);
  private static TestServer shared;

  private EtcdServers() {}

  public static ServerSpec spec() {
    return new ServerSpec("etcd", ENV_VAR, Optional.of(new LocalLauncher()),
        Optional.of(new ContainerLauncher(IMAGE, 2379, Map.of(),
            (host, port) -> "http://" + host + ":" + port,
            "/usr/local/bin/etcd", "--name=leases-test", "--data-dir=/tmp/etcd-data",
            "--listen-client-urls=http://0.0.0.0:2379",
            "--advertise-client-urls=http://127.0.0.1:2379",
            "--heartbeat-interval=50", "--election-timeout=500")),
        INSTALL_HINT);
  }

  /** The shared server, started on first use. */
  public static synchronized TestServer shared() {
    if (shared == null) {
      TestServer s = TestServers.of(spec());
      Runtime.getRuntime().addShutdownHook(new Thread(s::close, "etcd-test-server-stop"));
      shared = s;
    }
    return shared;
  }

  /** The shared server's endpoints, comma-separated. */
  public static String endpoints() {
    return shared().endpoint();
  }

  /**
   * Crashes the shared member ({@code SIGKILL}) and starts it again on the same ports and data
   * directory; returns once it is healthy (it has replayed its WAL and elected itself leader).
   * Clients reconnect by themselves. Needs the local server this class starts: one from
   * {@code $LEASES_ETCD_ENDPOINTS} cannot be restarted.
   */
  public static synchronized void restartShared() throws Exception {
    if (!(shared() instanceof LocalProcessServer local)) {
      throw new AssertionError("restarting etcd needs the local etcd these tests start; the shared"
          + " server is " + shared.description() + ": unset " + ENV_VAR + " to run this test");
    }
    long start = System.nanoTime();
    local.restart(Duration.ofSeconds(30));
    awaitHealthy(local.port(), Duration.ofSeconds(30));
    log.info("restarted {}: healthy after {} ms", local.description(),
        java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
  }

  /** The shared server's endpoints as a list. */
  public static List<String> endpointList() {
    return List.of(endpoints().split(","));
  }

  /**
   * The command line of one etcd member; {@code cluster} is the {@code --initial-cluster} value.
   * On CPUs other than amd64 it runs through {@code env ETCD_UNSUPPORTED_ARCH=<arch>}: etcd 3.4
   * refuses to start on arm64 (and other "unsupported" architectures) without it.
   */
  static List<String> argv(Path binary, String name, Path dataDir, int clientPort, int peerPort,
      String cluster, String clusterToken, int heartbeatMs, int electionMs) {
    return LocalServers.etcdArgv(binary, name, dataDir, clientPort, peerPort, cluster, clusterToken,
        heartbeatMs, electionMs);
  }

  /** This JVM's CPU architecture in Go's naming (what ETCD_UNSUPPORTED_ARCH must say). */
  static String goArch() {
    return LocalServers.goArch();
  }

  /** Waits until {@code GET /health} on the member says it is healthy (it has a leader). */
  static void awaitHealthy(int clientPort, Duration timeout) throws IOException, InterruptedException {
    LocalServers.awaitEtcdHealthy(clientPort, timeout);
  }

  private static final class LocalLauncher implements ServerSpec.Launcher {
    @Override
    public boolean available() {
      return LocalProcessServer.findBinary("etcd").isPresent();
    }

    @Override
    public String unavailableReason() {
      return "no etcd binary on the PATH";
    }

    @Override
    public TestServer start() throws Exception {
      Path binary = LocalProcessServer.findBinary("etcd").orElseThrow();
      int peerPort = FreePorts.pick();
      LocalProcessServer server = LocalProcessServer.start("etcd",
          (port, dir) -> argv(binary, "leases-test", dir.resolve("member"), port, peerPort,
              "leases-test=http://127.0.0.1:" + peerPort, "leases-test-" + port, 50, 500),
          port -> "http://127.0.0.1:" + port, Duration.ofSeconds(30));
      try {
        awaitHealthy(server.port(), Duration.ofSeconds(30));
      } catch (IOException | InterruptedException e) {
        server.close();
        throw e;
      }
      return server;
    }
  }
}
