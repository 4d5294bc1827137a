package dev.leases.tck.servers;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers "can Testcontainers start a container here?" with Testcontainers' own detection, which
 * tries {@code DOCKER_HOST}, the Docker socket, TCP hosts, Colima, Podman and the user's
 * {@code ~/.testcontainers.properties}. Testcontainers is an optional dependency of the kit: without
 * it on the class path no container can be started, and the answer is false.
 */
public final class DockerProbe {

  private static final Logger log = LoggerFactory.getLogger(DockerProbe.class);

  private DockerProbe() {}

  /** True if Testcontainers is on the class path and finds a working container engine. */
  public static boolean engineAnswers() {
    if (!testcontainersPresent(DockerProbe.class.getClassLoader())) {
      log.debug("Testcontainers is not on the class path: no container engine is used");
      return false;
    }
    return Detection.available();
  }

  static boolean testcontainersPresent(ClassLoader loader) {
    try {
      Class.forName("org.testcontainers.DockerClientFactory", false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Linked only when Testcontainers is present. */
  private static final class Detection {
    static boolean available() {
      try {
        return org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
      } catch (RuntimeException | LinkageError e) {
        log.info("Testcontainers found no working container engine: {}", e.toString());
        return false;
      }
    }
  }
}
