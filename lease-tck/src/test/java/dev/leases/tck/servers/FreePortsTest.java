package dev.leases.tck.servers;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
}
