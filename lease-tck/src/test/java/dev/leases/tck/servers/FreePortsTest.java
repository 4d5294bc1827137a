package dev.leases.tck.servers;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class FreePortsTest {

  /**
   * A cluster's members take several ports each from consecutive picks; the kernel hands the same
   * ephemeral port out again once its socket is closed (2,000 plain picks here repeated about 270),
   * and a Consul server given one port for two purposes refuses to start.
   */
  @Test
  void picksInOneJvmNeverRepeatAPort() {
    Set<Integer> seen = new HashSet<>();
    List<Integer> repeated = IntStream.range(0, 2_000).map(i -> FreePorts.pick())
        .filter(p -> !seen.add(p)).boxed().toList();
    assertThat(repeated).isEmpty();
  }

  @Test
  void concurrentPicksNeverRepeatAPort() {
    Set<Integer> seen = ConcurrentHashMap.newKeySet();
    List<Integer> repeated = IntStream.range(0, 2_000).parallel().map(i -> FreePorts.pick())
        .filter(p -> !seen.add(p)).boxed().toList();
    assertThat(repeated).isEmpty();
  }

  /**
   * Outgoing connections take their source ports from the kernel's ephemeral range: a Consul agent
   * of the test command once failed with "bind: address already in use" on a picked port there.
   */
  @Test
  void picksLieBelowTheKernelsEphemeralRange() {
    int low = FreePorts.ephemeralLow();
    assertThat(IntStream.range(0, 500).map(i -> FreePorts.pick()).boxed().toList())
        .allSatisfy(p -> assertThat(p).isBetween(FreePorts.LOWEST, low - 1));
  }

  /**
   * Suites run in parallel JVMs, each starting servers: a port another live JVM picked is never
   * picked here, even while that JVM's server is down (a restart keeps its ports).
   */
  @Test
  void aPortAnotherLiveJvmPickedIsNotPickedHere() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
        Child.class.getName()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      Set<Integer> theirs = new HashSet<>();
      BufferedReader out = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      for (String line = out.readLine(); !"done".equals(line); line = out.readLine()) {
        assertThat(line).as("the child JVM's output").isNotNull();
        theirs.add(Integer.parseInt(line));
      }
      assertThat(theirs).hasSize(Child.PICKS);
      List<Integer> shared = IntStream.range(0, 4_000).map(i -> FreePorts.pick())
          .filter(theirs::contains).boxed().toList();
      assertThat(shared).isEmpty();
    } finally {
      child.getOutputStream().close(); // the child exits when its input ends
      if (!child.waitFor(30, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }

  /** Picks ports, prints them, and holds them until its standard input ends. */
  static final class Child {
    static final int PICKS = 2_000;

    public static void main(String[] args) throws Exception {
      for (int i = 0; i < PICKS; i++) {
        System.out.println(FreePorts.pick());
      }
      System.out.println("done");
      System.out.flush();
      while (System.in.read() >= 0) {
        // hold the reservations
      }
    }
  }
}
