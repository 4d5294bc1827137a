package dev.leases.tck.servers;

/** A running server for tests: external, a local process, or a container. Closing stops what we started. */
public interface TestServer extends AutoCloseable {

  /** How to reach it, in the backend's own form (a JDBC URL, {@code redis://host:port}, ...). */
  String endpoint();

  /** For logs and failure messages: where it came from. */
  String description();

  @Override
  void close();
}
