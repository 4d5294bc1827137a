package dev.leases.consul;

import dev.leases.tck.servers.ContainerLauncher;
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

/**
 * The Consul agent the tests share: {@code $LEASES_CONSUL_URL}, else a local {@code consul} (on the
 * PATH, or built by {@code scripts/install-consul.sh} into
 * {@code ${LEASES_CACHE_DIR:-$HOME/.cache/leases}/consul/<version>/consul}) started as a dev agent on
 * free loopback ports with {@code session_ttl_min = "1s"}, else {@code hashicorp/consul:1.22} when
 * Docker answers, else a failure that says how to get one. One agent per test JVM, stopped at exit.
 */
public final class ConsulServers {

  public static final String ENV_VAR = "LEASES_CONSUL_URL";
  public static final String INSTALL_HINT = "Run scripts/install-consul.sh (builds Consul from its"
      + " Go module), or set " + ENV_VAR + "=http://127.0.0.1:8500 (an agent whose"
      + " session_ttl_min is 1s)";

  private static TestServer shared;

  private ConsulServers() {}

  public static ServerSpec spec() {
    return new ServerSpec("Consul", ENV_VAR, Optional.of(new LocalLauncher()),
        Optional.of(new ContainerLauncher("hashicorp/consul:1.22", 8500, Map.of(),
            (host, port) -> "http://" + host + ":" + port,
            "agent", "-dev", "-client", "0.0.0.0", "-hcl", "session_ttl_min = \"1s\"")),
        INSTALL_HINT);
  }

  /** The shared agent, started on first use, with a leader elected. */
  public static synchronized TestServer shared() {
    if (shared == null) {
      TestServer s = TestServers.of(spec());
      Runtime.getRuntime().addShutdownHook(new Thread(s::close, "consul-test-server-stop"));
      try {
        awaitLeader(s.endpoint(), Duration.ofSeconds(60));
      } catch (RuntimeException e) {
        s.close();
        throw e;
      }
      shared = s;
    }
    return shared;
  }

  /** The shared agent's {@code http://host:port}. */
  public static String sharedUrl() {
    return shared().endpoint();
  }

  /** The local binary: {@code consul} on the PATH, else the newest one in the install cache. */
  public static Optional<Path> localBinary() {
    return LocalServers.consulBinary();
  }

  /**
   * A dev agent (in-memory state) on {@code httpPort}, every other port free or disabled, loopback
   * only, no update check.
   *
   * @param lowTtlMin whether to lower {@code session_ttl_min} to 1s (otherwise Consul's 10s)
   */
  static List<String> devAgentArgv(Path binary, int httpPort, boolean lowTtlMin) {
    return LocalServers.consulDevAgentArgv(binary, httpPort, lowTtlMin);
  }

  /** Loopback binding, the HTTP port, free ports for Serf and server RPC, the rest disabled. */
  static List<String> commonArgs(int httpPort) {
    return LocalServers.consulCommonArgs(httpPort);
  }

  /** Waits until the agent at {@code url} names a Raft leader. */
  public static void awaitLeader(String url, Duration timeout) {
    try {
      LocalServers.awaitConsulLeader(url, timeout);
    } catch (IOException e) {
      throw new IllegalStateException(e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a Consul leader", e);
    }
  }

  private static final class LocalLauncher implements ServerSpec.Launcher {
    @Override
    public boolean available() {
      return localBinary().isPresent();
    }

    @Override
    public String unavailableReason() {
      return "consul is not on the PATH nor in ${LEASES_CACHE_DIR:-$HOME/.cache/leases}/consul/*/";
    }

    @Override
    public TestServer start() throws Exception {
      Path binary = localBinary().orElseThrow();
      return LocalProcessServer.start("Consul", (port, dir) -> devAgentArgv(binary, port, true),
          port -> "http://127.0.0.1:" + port, Duration.ofSeconds(60));
    }
  }
}
