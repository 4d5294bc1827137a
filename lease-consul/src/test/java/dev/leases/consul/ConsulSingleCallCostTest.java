package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import java.time.Duration;
import java.util.Arrays;
import java.util.UUID;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;

/**
 * What a single call costs next to a plain KV PUT on the same agent in the same run: p50 of 500
 * calls each of a PUT, an acquire of a fresh name and a renewal, and their ratios; then the same
 * through {@link CountingHttpProxy}, whose hop dominates every request (tens of milliseconds), as
 * a network hop to the agent would: there an acquire's two requests sent in parallel cost one hop,
 * a renewal's two in sequence two. Printed, not asserted (the machine is shared); the
 * assertions only check that the calls worked.
 */
class ConsulSingleCallCostTest {

  private static double p50Millis(int n, IntConsumer op) {
    for (int i = 0; i < Math.min(50, n); i++) {
      op.accept(n + i); // warm-up, not counted
    }
    long[] t = new long[n];
    for (int i = 0; i < n; i++) {
      long s = System.nanoTime();
      op.accept(i);
      t[i] = System.nanoTime() - s;
    }
    Arrays.sort(t);
    return t[n / 2] / 1e6;
  }

  @Test
  void acquireAndRenewNextToAPlainPut() {
    measure(ConsulServers.sharedUrl(), "", 500);
  }

  @Test
  void acquireAndRenewNextToAPlainPutOverASlowHop() throws Exception {
    try (CountingHttpProxy hop = new CountingHttpProxy(ConsulServers.sharedUrl())) {
      measure(hop.url(), " through a slow hop", 30);
    }
  }

  private static void measure(String url, String where, int calls) {
    Consul c = Consul.builder().withUrl(url).withPing(false).build();
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(url).build()) {
      KeyValueClient kv = c.keyValueClient();
      String base = "cost-" + UUID.randomUUID();
      HolderId h = HolderId.generate();
      Duration ttl = Duration.ofSeconds(60);
      // a freshly started agent may take a while over its first writes
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30))
          .ignoreExceptionsInstanceOf(dev.leases.LeaseStoreUnavailableException.class)
          .until(() -> s.acquireOrRenew(base + "-renewed", h, ttl).isPresent());
      for (int round = 0; round < 2; round++) {
        String r = base + "-" + round;
        double put = p50Millis(calls, i -> assertThat(kv.putValue(r + "/put", "v" + i)).isTrue());
        double acquire = p50Millis(calls,
            i -> s.acquireOrRenew(r + "-a" + i, h, ttl).orElseThrow());
        double renew = p50Millis(calls,
            i -> s.acquireOrRenew(base + "-renewed", h, ttl).orElseThrow());
        System.out.printf("COST%s round %d: p50 put %.3f ms, acquire %.3f ms (%.2fx), renew %.3f ms"
            + " (%.2fx)%n", where, round, put, acquire, acquire / put, renew, renew / put);
      }
    } finally {
      c.destroy();
    }
  }
}
