package dev.leases.tck.servers;

import java.util.Objects;
import java.util.Optional;

/**
 * How to find a server of one product, in the order {@link TestServers#provide} tries:
 * an endpoint from {@code envVar}; a local binary started by {@code local}; a container started by
 * {@code container} when a Docker engine answers; otherwise a failure that prints
 * {@code installHint}.
 *
 * @param product for messages, e.g. "PostgreSQL"
 * @param envVar environment variable holding an explicit endpoint
 * @param local starts a local server, if this machine has one
 * @param container starts a container, used only when a Docker engine answers
 * @param installHint what a person should do to make the server available
 */
public record ServerSpec(
    String product,
    String envVar,
    Optional<Launcher> local,
    Optional<Launcher> container,
    String installHint) {

  /** Checks the parts. */
  public ServerSpec {
    Objects.requireNonNull(product, "product");
    Objects.requireNonNull(envVar, "envVar");
    Objects.requireNonNull(local, "local");
    Objects.requireNonNull(container, "container");
    Objects.requireNonNull(installHint, "installHint");
  }

  /** Starts one kind of server. */
  public interface Launcher {
    /** Whether this launcher can work here (binary present, ...); must be cheap. */
    boolean available();

    /** Why not, when {@link #available()} is false. */
    default String unavailableReason() {
      return "not available";
    }

    /** Starts a server; the caller closes it. */
    TestServer start() throws Exception;
  }
}
