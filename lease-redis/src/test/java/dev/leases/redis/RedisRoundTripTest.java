package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.tck.servers.TcpProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a single call sends, read off the wire through a {@link TcpProxy}: once the server has the
 * scripts cached, every call is one {@code EVALSHA} (no script body, no second command, nothing
 * from Lettuce in between); the body goes once, with {@code EVAL}, after the server answered
 * {@code NOSCRIPT}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisRoundTripTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  @Test
  void everySingleCallIsOneEvalshaOnceTheScriptsAreCached() throws Exception {
    try (TcpProxy proxy = new TcpProxy(RedisServers.sharedPort());
        RedisLeaseStore store = RedisLeaseStore.builder("redis://127.0.0.1:" + proxy.port())
            .keyPrefix("trip-" + UUID.randomUUID().toString().substring(0, 8)).build()) {
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      String warm = "warm-" + UUID.randomUUID();
      store.acquireOrRenew(warm, a, TTL).orElseThrow();
      assertThat(store.release(warm, a)).isTrue();
      Wire wire = new Wire(proxy);
      String name = "trip-" + UUID.randomUUID();
      store.acquireOrRenew(name, a, TTL).orElseThrow();
      assertThat(wire.next()).as("a fresh acquire").containsExactly("EVALSHA");
      store.acquireOrRenew(name, a, TTL).orElseThrow();
      assertThat(wire.next()).as("a renewal").containsExactly("EVALSHA");
      assertThat(store.acquireOrRenew(name, b, TTL)).isEmpty();
      assertThat(wire.next()).as("a contended miss").containsExactly("EVALSHA");
      assertThat(store.release(name, a)).isTrue();
      assertThat(wire.next()).as("a release").containsExactly("EVALSHA");
    }
  }

  /** The commands every connection through the proxy sent since the last look. */
  private static final class Wire {
    private final TcpProxy proxy;
    private List<List<String>> seen;

    Wire(TcpProxy proxy) {
      this.proxy = proxy;
      this.seen = read();
    }

    private List<List<String>> read() {
      return proxy.clientBytes().stream().map(RespCommands::parse).toList();
    }

    List<String> next() {
      List<List<String>> now = read();
      List<String> sent = new ArrayList<>();
      for (int c = 0; c < now.size(); c++) {
        List<String> all = now.get(c);
        sent.addAll(all.subList(c < seen.size() ? seen.get(c).size() : 0, all.size()));
      }
      seen = now;
      return sent;
    }
  }
}
