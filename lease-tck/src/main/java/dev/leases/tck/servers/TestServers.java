package dev.leases.tck.servers;

import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Provides a real server per backend for tests, shared by every backend module: explicit endpoint
 * from the environment, then a local binary, then a container when a Docker engine answers, else a
 * failure that says how to install the server. Never a silent skip.
 */
public final class TestServers {

  private static final Logger log = LoggerFactory.getLogger(TestServers.class);

  private final Map<String, String> environment;
  private final BooleanSupplier dockerAnswers;

  /** Uses the process environment and probes the local Docker socket. */
  public TestServers() {
    this(System.getenv(), DockerProbe::engineAnswers);
  }

  /** For tests of the selection itself. */
  public TestServers(Map<String, String> environment, BooleanSupplier dockerAnswers) {
    this.environment = environment;
    this.dockerAnswers = dockerAnswers;
  }

  /** Convenience for {@code new TestServers().provide(spec)}. */
  public static TestServer of(ServerSpec spec) {
    return new TestServers().provide(spec);
  }

  /** Finds or starts a server; throws {@link IllegalStateException} with an install hint if none. */
  public TestServer provide(ServerSpec spec) {
    String endpoint = environment.get(spec.envVar());
    if (endpoint != null && !endpoint.isBlank()) {
      log.info("{}: using the external server from ${}", spec.product(), spec.envVar());
      return new ExternalServer(endpoint.trim(), spec.product() + " from $" + spec.envVar());
    }
    StringBuilder tried = new StringBuilder("$" + spec.envVar() + " is not set");
    if (spec.local().isPresent()) {
      ServerSpec.Launcher local = spec.local().get();
      if (local.available()) {
        return start(spec, local, "local");
      }
      tried.append("; local: ").append(local.unavailableReason());
    } else {
      tried.append("; no local launcher");
    }
    if (spec.container().isPresent()) {
      if (dockerAnswers.getAsBoolean()) {
        return start(spec, spec.container().get(), "container");
      }
      tried.append("; no Docker engine answers, so Testcontainers is not used");
    }
    throw new IllegalStateException(spec.product() + " is not available for the tests ("
        + tried + "). " + spec.installHint());
  }

  private static TestServer start(ServerSpec spec, ServerSpec.Launcher launcher, String kind) {
    try {
      TestServer server = launcher.start();
      log.info("{}: started {} server: {}", spec.product(), kind, server.description());
      return server;
    } catch (Exception e) {
      throw new IllegalStateException(spec.product() + ": the " + kind + " server failed to start: "
          + e + ". " + spec.installHint(), e);
    }
  }

  private record ExternalServer(String endpoint, String description) implements TestServer {
    @Override
    public void close() {}
  }
}
