package dev.leases.tck.servers;

import java.util.Map;
import java.util.function.BiFunction;
import org.testcontainers.containers.GenericContainer;

/**
 * Starts a server in a container with Testcontainers. Only loaded when a Docker engine answers
 * ({@link DockerProbe}); Testcontainers is an optional dependency of the kit, so a backend module
 * that wants this branch adds {@code org.testcontainers:testcontainers} to its test class path.
 */
public final class ContainerLauncher implements ServerSpec.Launcher {

  private final String image;
  private final int port;
  private final Map<String, String> env;
  private final BiFunction<String, Integer, String> endpoint;
  private final String[] command;

  /**
   * @param endpoint builds the endpoint from the mapped host and port
   */
  public ContainerLauncher(String image, int port, Map<String, String> env,
      BiFunction<String, Integer, String> endpoint, String... command) {
    this.image = image;
    this.port = port;
    this.env = Map.copyOf(env);
    this.endpoint = endpoint;
    this.command = command.clone();
  }

  @Override
  public boolean available() {
    try {
      Class.forName("org.testcontainers.containers.GenericContainer");
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  @Override
  public String unavailableReason() {
    return "org.testcontainers:testcontainers is not on the test class path";
  }

  @Override
  public TestServer start() {
    GenericContainer<?> c = new GenericContainer<>(image).withExposedPorts(port).withEnv(env);
    if (command.length > 0) {
      c.withCommand(command);
    }
    c.start();
    String ep = endpoint.apply(c.getHost(), c.getMappedPort(port));
    return new TestServer() {
      @Override
      public String endpoint() {
        return ep;
      }

      @Override
      public String description() {
        return "container " + image + " at " + ep;
      }

      @Override
      public void close() {
        c.stop();
      }
    };
  }
}
