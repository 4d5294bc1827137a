package dev.leases.tck.servers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class TestServersTest {

  private final List<String> started = new ArrayList<>();

  private ServerSpec.Launcher launcher(String kind, boolean available) {
    return new ServerSpec.Launcher() {
      @Override
      public boolean available() {
        return available;
      }

      @Override
      public String unavailableReason() {
        return kind + " binary not found";
      }

      @Override
      public TestServer start() {
        started.add(kind);
        return new TestServer() {
          @Override
          public String endpoint() {
            return kind + "://endpoint";
          }

          @Override
          public String description() {
            return kind;
          }

          @Override
          public void close() {}
        };
      }
    };
  }

  private ServerSpec spec(boolean local, boolean container) {
    return new ServerSpec("Thing", "THING_URL", Optional.of(launcher("local", local)),
        Optional.of(launcher("container", container)), "apt-get install thing");
  }

  @Test
  void environmentEndpointWinsOverEverything() {
    TestServers servers = new TestServers(Map.of("THING_URL", " thing://external "), () -> true);
    TestServer s = servers.provide(spec(true, true));
    assertThat(s.endpoint()).isEqualTo("thing://external");
    assertThat(s.description()).contains("$THING_URL");
    assertThat(started).isEmpty();
  }

  @Test
  void blankEnvironmentVariableIsIgnored() {
    TestServers servers = new TestServers(Map.of("THING_URL", "  "), () -> false);
    assertThat(servers.provide(spec(true, true)).endpoint()).isEqualTo("local://endpoint");
  }

  @Test
  void localBinaryComesBeforeContainers() {
    TestServers servers = new TestServers(Map.of(), () -> true);
    assertThat(servers.provide(spec(true, true)).endpoint()).isEqualTo("local://endpoint");
    assertThat(started).containsExactly("local");
  }

  @Test
  void containerOnlyWhenDockerAnswers() {
    TestServers withDocker = new TestServers(Map.of(), () -> true);
    assertThat(withDocker.provide(spec(false, true)).endpoint()).isEqualTo("container://endpoint");
    TestServers withoutDocker = new TestServers(Map.of(), () -> false);
    assertThatThrownBy(() -> withoutDocker.provide(spec(false, true)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Thing is not available")
        .hasMessageContaining("$THING_URL is not set")
        .hasMessageContaining("local binary not found")
        .hasMessageContaining("no Docker engine answers")
        .hasMessageContaining("apt-get install thing");
    assertThat(started).containsExactly("container");
  }

  @Test
  void failedStartSaysHowToInstall() {
    ServerSpec spec = new ServerSpec("Thing", "THING_URL", Optional.of(new ServerSpec.Launcher() {
      @Override
      public boolean available() {
        return true;
      }

      @Override
      public TestServer start() {
        throw new IllegalStateException("port in use");
      }
    }), Optional.empty(), "apt-get install thing");
    assertThatThrownBy(() -> new TestServers(Map.of(), () -> false).provide(spec))
        .hasMessageContaining("port in use").hasMessageContaining("apt-get install thing");
  }

  @Test
  void dockerProbeAnswersFalseWhenTestcontainersIsNotOnTheClassPath() {
    ClassLoader bare = new ClassLoader(null) {};
    assertThat(DockerProbe.testcontainersPresent(bare)).isFalse();
    assertThat(DockerProbe.testcontainersPresent(DockerProbe.class.getClassLoader()))
        .as("lease-tck's own tests have Testcontainers").isTrue();
  }

  @Test
  void localProcessServerStartsAndCleansUp() throws Exception {
    Optional<Path> python = LocalProcessServer.findBinary("python3");
    assertThat(python).as("python3 is part of the machine image").isPresent();
    LocalProcessServer s = LocalProcessServer.start("Echo", (port, dir) -> List.of(
        python.get().toString(), "-m", "http.server", Integer.toString(port), "--bind", "127.0.0.1"),
        port -> "http://127.0.0.1:" + port, java.time.Duration.ofSeconds(20));
    Path dir = s.dataDir();
    assertThat(dir).exists();
    assertThat(s.endpoint()).isEqualTo("http://127.0.0.1:" + s.port());
    s.close();
    assertThat(dir).doesNotExist();
  }

  @Test
  void restartedLocalProcessServerIsANewProcessOnTheSamePortAndDataDirectory() throws Exception {
    Optional<Path> python = LocalProcessServer.findBinary("python3");
    assertThat(python).as("python3 is part of the machine image").isPresent();
    // serves its working directory, the data directory: a file written there survives the restart
    try (LocalProcessServer s = LocalProcessServer.start("Echo", (port, dir) -> List.of(
        python.get().toString(), "-m", "http.server", Integer.toString(port), "--bind",
        "127.0.0.1"), port -> "http://127.0.0.1:" + port, java.time.Duration.ofSeconds(20))) {
      java.nio.file.Files.writeString(s.dataDir().resolve("kept.txt"), "kept");
      long pid = s.pid();
      int port = s.port();
      s.restart(java.time.Duration.ofSeconds(20));
      assertThat(s.pid()).isNotEqualTo(pid);
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
      assertThat(s.port()).isEqualTo(port);
      java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(s.endpoint() + "/kept.txt"))
              .timeout(java.time.Duration.ofSeconds(10)).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.body()).isEqualTo("kept");
      assertThat(s.description()).contains("pid " + s.pid());
    }
  }

  @Test
  void localProcessServerThatNeverListensFailsWithItsOutput() {
    assertThatThrownBy(() -> LocalProcessServer.start("Silent", (port, dir) -> List.of(
        "sh", "-c", "echo refusing to start; exit 3"), port -> "x", java.time.Duration.ofSeconds(2)))
        .hasMessageContaining("did not listen").hasMessageContaining("refusing to start");
  }
}
