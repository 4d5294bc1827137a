package dev.leases.redis;

import dev.leases.tck.servers.ContainerLauncher;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import dev.leases.tck.servers.ServerSpec;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Redis server the tests share: {@code $LEASES_REDIS_URI}, else a local {@code redis-server}
 * without persistence on a free loopback port, else {@code redis:7-alpine} when Docker answers,
 * else a failure that says how to install one. One server per test JVM, stopped at JVM exit.
 */
public final class RedisServers {

  public static final String ENV_VAR = "LEASES_REDIS_URI";
  public static final String INSTALL_HINT = "Install it with: apt-get install -y redis-server"
      + " (or run scripts/install-test-servers.sh), or set " + ENV_VAR + "=redis://127.0.0.1:6379";

  private static TestServer shared;

  private RedisServers() {}

  public static ServerSpec spec() {
    return new ServerSpec("Redis", ENV_VAR, Optional.of(new LocalLauncher()),
        Optional.of(new ContainerLauncher("redis:7-alpine", 6379, Map.of(),
            (host, port) -> "redis://" + host + ":" + port)),
        INSTALL_HINT);
  }

  /** The shared server, started on first use. */
  public static synchronized TestServer shared() {
    if (shared == null) {
      TestServer s = TestServers.of(spec());
      Runtime.getRuntime().addShutdownHook(new Thread(s::close, "redis-test-server-stop"));
      shared = s;
    }
    return shared;
  }

  /** The shared server's {@code redis://} URI. */
  public static String sharedUri() {
    return shared().endpoint();
  }

  /**
   * Crashes the shared server and starts it again on the same port, without persistence as before:
   * it comes back empty, as a production Redis without RDB or AOF does. Returns once it accepts
   * connections; clients reconnect (Lettuce does so by itself). Takes well under a second. Needs
   * the local server this class starts: one from {@code $LEASES_REDIS_URI} cannot be restarted.
   */
  public static synchronized void restartShared() throws Exception {
    if (!(shared() instanceof LocalProcessServer local)) {
      throw new AssertionError("restarting Redis needs the local redis-server these tests start;"
          + " the shared server is " + shared.description() + ": unset " + ENV_VAR
          + " to run this test");
    }
    local.restart(Duration.ofSeconds(30));
  }

  /** The shared server's port, on 127.0.0.1 (for a {@code TcpProxy} in front of it). */
  public static int sharedPort() {
    return java.net.URI.create(sharedUri()).getPort();
  }

  /** The arguments of a throw-away, non-persistent, loopback-only server. */
  static List<String> argv(Path binary, int port, Path dir) {
    return LocalServers.redisArgv(binary, port, dir);
  }

  private static final class LocalLauncher implements ServerSpec.Launcher {
    @Override
    public boolean available() {
      return LocalProcessServer.findBinary("redis-server").isPresent();
    }

    @Override
    public String unavailableReason() {
      return "redis-server is not on the PATH";
    }

    @Override
    public TestServer start() throws Exception {
      Path binary = LocalProcessServer.findBinary("redis-server").orElseThrow();
      return LocalProcessServer.start("Redis", (port, dir) -> argv(binary, port, dir),
          port -> "redis://127.0.0.1:" + port, Duration.ofSeconds(30));
    }
  }
}
