package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.FreePorts;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class ConsulLeaseStoreFactoryTest {

  private final ConsulLeaseStoreFactory factory = new ConsulLeaseStoreFactory();

  @Test
  void settingsAreValidatedWithMessagesThatNameTheSetting() {
    assertThatThrownBy(() -> factory.open(Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'url'");
    assertThatThrownBy(() -> factory.open(Map.of("url", "http://127.0.0.1:1", "keyprefix", "x")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown setting 'keyprefix'");
    assertThatThrownBy(() -> factory.open(Map.of("url", "http://127.0.0.1:1", "callTimeoutMs", "2s")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeoutMs");
    assertThatThrownBy(() -> factory.open(Map.of("url", "http://127.0.0.1:1", "keyPrefix", "a//b")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
  }

  @Test
  void opensAStoreWithThePrefixAndTimeoutGiven() {
    String url = ConsulServers.sharedUrl();
    try (LeaseStore s = factory.open(Map.of("url", url, "keyPrefix", "tests/factory",
        "callTimeoutMs", "1500"))) {
      assertThat(((ConsulLeaseStore) s).keyOf("n")).isEqualTo("tests/factory/n");
      String n = "factory-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      assertThat(s.acquireOrRenew(n, a, Duration.ofSeconds(5))).isPresent();
      assertThat(s.release(n, a)).isTrue();
    }
  }

  @Test
  void anAgentThatIsNotThereFailsWithinTheTimeoutNamingTheUrl() {
    int closed = FreePorts.pick();
    try (LeaseStore s = factory.open(Map.of("url", "http://127.0.0.1:" + closed,
        "callTimeoutMs", "500"))) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.acquireOrRenew("x", HolderId.generate(), Duration.ofSeconds(5)))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("127.0.0.1:" + closed)
          .hasMessageContaining("outcome is unknown");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      // release hints are best effort: subscribing while the agent is down does not throw
      s.onRelease("x", () -> {}).close();
    }
  }
}
