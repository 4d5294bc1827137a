package dev.leases.tck.servers;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * How to start each backend's server from a local binary on loopback, in one place for the
 * backends' tests and the benchmark harness: command lines, where the binaries are, and when a
 * started server is ready (listening is not enough: etcd and Consul must have elected a leader).
 */
public final class LocalServers {

  private LocalServers() {}

  // ------------------------------------------------------------------ Redis

  /** {@code redis-server} without persistence, bound to loopback. */
  public static List<String> redisArgv(Path binary, int port, Path dir) {
    return List.of(binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", dir.toString());
  }

  /** Starts the installed {@code redis-server}; endpoint {@code redis://127.0.0.1:PORT}. */
  public static LocalProcessServer startRedis() throws IOException, InterruptedException {
    Path binary = LocalProcessServer.findBinary("redis-server").orElseThrow(
        () -> new IllegalStateException("redis-server is not installed: apt-get install -y"
            + " redis-server"));
    return LocalProcessServer.start("Redis", (port, dir) -> redisArgv(binary, port, dir),
        port -> "redis://127.0.0.1:" + port, Duration.ofSeconds(30));
  }

  // ------------------------------------------------------------------ etcd

  /**
   * The command line of one etcd member; {@code cluster} is the {@code --initial-cluster} value.
   * On CPUs other than amd64 it runs through {@code env ETCD_UNSUPPORTED_ARCH=<arch>}: etcd 3.4
   * refuses to start on arm64 (and other "unsupported" architectures) without it.
   */
  public static List<String> etcdArgv(Path binary, String name, Path dataDir, int clientPort,
      int peerPort, String cluster, String clusterToken, int heartbeatMs, int electionMs) {
    return etcdArgv(binary, name, dataDir, clientPort, peerPort, cluster, clusterToken,
        heartbeatMs, electionMs, List.of());
  }

  /**
   * {@link #etcdArgv(Path, String, Path, int, int, String, String, int, int)} followed by
   * {@code extraFlags} ({@code --name=value}; a flag given twice takes its last value).
   */
  public static List<String> etcdArgv(Path binary, String name, Path dataDir, int clientPort,
      int peerPort, String cluster, String clusterToken, int heartbeatMs, int electionMs,
      List<String> extraFlags) {
    List<String> argv = new ArrayList<>();
    String arch = goArch();
    if (!arch.equals("amd64")) {
      argv.add("env");
      argv.add("ETCD_UNSUPPORTED_ARCH=" + arch);
    }
    argv.addAll(List.of(binary.toString(),
        "--name=" + name,
        "--data-dir=" + dataDir,
        "--listen-client-urls=http://127.0.0.1:" + clientPort,
        "--advertise-client-urls=http://127.0.0.1:" + clientPort,
        "--listen-peer-urls=http://127.0.0.1:" + peerPort,
        "--initial-advertise-peer-urls=http://127.0.0.1:" + peerPort,
        "--initial-cluster=" + cluster,
        "--initial-cluster-token=" + clusterToken,
        "--initial-cluster-state=new",
        "--heartbeat-interval=" + heartbeatMs,
        "--election-timeout=" + electionMs,
        "--log-level=warn"));
    argv.addAll(extraFlags);
    return argv;
  }

  /** This JVM's CPU architecture in Go's naming (what ETCD_UNSUPPORTED_ARCH must say). */
  public static String goArch() {
    String arch = System.getProperty("os.arch", "");
    return switch (arch) {
      case "amd64", "x86_64" -> "amd64";
      case "aarch64", "arm64" -> "arm64";
      default -> arch;
    };
  }

  /**
   * Starts the installed {@code etcd} as a one-member cluster with a 50 ms heartbeat and a 500 ms
   * election timeout (so that 1 s TTLs are granted as asked), and waits until it is healthy.
   */
  public static LocalProcessServer startEtcd() throws IOException, InterruptedException {
    Path binary = LocalProcessServer.findBinary("etcd").orElseThrow(
        () -> new IllegalStateException("etcd is not installed: apt-get install -y etcd-server"));
    int peerPort = FreePorts.pick();
    LocalProcessServer server = LocalProcessServer.start("etcd",
        (port, dir) -> etcdArgv(binary, "leases", dir.resolve("member"), port, peerPort,
            "leases=http://127.0.0.1:" + peerPort, "leases-" + port, 50, 500),
        port -> "http://127.0.0.1:" + port, Duration.ofSeconds(30));
    try {
      awaitEtcdHealthy(server.port(), Duration.ofSeconds(30));
    } catch (IOException | InterruptedException e) {
      server.close();
      throw e;
    }
    return server;
  }

  /** Waits until {@code GET /health} on the member says it is healthy (it has a leader). */
  public static void awaitEtcdHealthy(int clientPort, Duration timeout)
      throws IOException, InterruptedException {
    awaitHttp("etcd on port " + clientPort, "http://127.0.0.1:" + clientPort + "/health",
        r -> r.body().contains("\"true\""), timeout);
  }

  // ------------------------------------------------------------------ Consul

  /**
   * The local {@code consul}: on the PATH, else the newest one that {@code scripts/install-consul.sh}
   * built into {@code ${LEASES_CACHE_DIR:-$HOME/.cache/leases}/consul/<version>/consul}.
   */
  public static Optional<Path> consulBinary() {
    Optional<Path> onPath = LocalProcessServer.findBinary("consul");
    if (onPath.isPresent()) {
      return onPath;
    }
    String root = System.getenv("LEASES_CACHE_DIR");
    Path cache = root != null && !root.isBlank()
        ? Path.of(root, "consul")
        : Path.of(System.getProperty("user.home"), ".cache", "leases", "consul");
    if (!Files.isDirectory(cache)) {
      return Optional.empty();
    }
    try (Stream<Path> versions = Files.list(cache)) {
      return versions.map(v -> v.resolve("consul")).filter(Files::isExecutable)
          .max(Comparator.comparing(p -> p.getParent().getFileName().toString()));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * A dev agent (in-memory state) on {@code httpPort}, every other port free or disabled, loopback
   * only, no update check.
   *
   * @param lowTtlMin whether to lower {@code session_ttl_min} to 1s (otherwise Consul's 10s)
   */
  public static List<String> consulDevAgentArgv(Path binary, int httpPort, boolean lowTtlMin) {
    List<String> argv = new ArrayList<>(List.of(binary.toString(), "agent", "-dev",
        "-node", "leases-" + httpPort));
    argv.addAll(consulCommonArgs(httpPort));
    if (lowTtlMin) {
      argv.addAll(List.of("-hcl", "session_ttl_min = \"1s\""));
    }
    return argv;
  }

  /** Loopback binding, the HTTP port, free ports for Serf and server RPC, the rest disabled. */
  public static List<String> consulCommonArgs(int httpPort) {
    return List.of("-bind", "127.0.0.1", "-client", "127.0.0.1",
        "-http-port", Integer.toString(httpPort), "-dns-port", "-1", "-grpc-port", "-1",
        "-grpc-tls-port", "-1",
        "-serf-lan-port", Integer.toString(FreePorts.pick()),
        "-serf-wan-port", Integer.toString(FreePorts.pick()),
        "-server-port", Integer.toString(FreePorts.pick()),
        "-hcl", "ports { https = -1 }", "-hcl", "disable_update_check = true");
  }

  /** Starts a local Consul dev agent with {@code session_ttl_min = "1s"} and waits for a leader. */
  public static LocalProcessServer startConsul() throws IOException, InterruptedException {
    Path binary = consulBinary().orElseThrow(() -> new IllegalStateException("consul is not"
        + " installed: run scripts/install-consul.sh (builds it from its Go module)"));
    LocalProcessServer server = LocalProcessServer.start("Consul",
        (port, dir) -> consulDevAgentArgv(binary, port, true),
        port -> "http://127.0.0.1:" + port, Duration.ofSeconds(60));
    try {
      awaitConsulLeader(server.endpoint(), Duration.ofSeconds(60));
    } catch (IOException | InterruptedException | RuntimeException e) {
      server.close();
      throw e;
    }
    return server;
  }

  /**
   * Waits until the agent at {@code url} names a Raft leader and its node is in the catalog: a
   * session cannot be created before the node is registered ("Missing node registration"). Where
   * ACLs deny anonymous reads, the catalog looks empty to this probe, and a leader is enough.
   */
  public static void awaitConsulLeader(String url, Duration timeout)
      throws IOException, InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    awaitHttp("Consul at " + url, url + "/v1/status/leader",
        r -> r.body().trim().startsWith("\"") && r.body().trim().length() > 2, timeout);
    awaitHttp("Consul at " + url + " (its node in the catalog)", url + "/v1/catalog/nodes",
        r -> r.body().contains("\"Node\"") || r.headers()
            .firstValue("X-Consul-Default-Acl-Policy").orElse("").equals("deny"),
        Duration.ofNanos(Math.max(0, end - System.nanoTime())));
  }

  private static void awaitHttp(String what, String url, Predicate<HttpResponse<String>> ready,
      Duration timeout)
      throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    long end = System.nanoTime() + timeout.toNanos();
    String last = "no answer";
    while (System.nanoTime() < end) {
      try {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
        last = r.statusCode() + " " + r.body().trim();
        if (r.statusCode() == 200 && ready.test(r)) {
          return;
        }
      } catch (IOException e) {
        last = e.toString();
      }
      Thread.sleep(50);
    }
    throw new IOException(what + " is not ready after " + timeout + " (last answer: " + last + ")");
  }
}
