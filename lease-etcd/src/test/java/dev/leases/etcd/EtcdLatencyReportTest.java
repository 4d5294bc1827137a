package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Prints (does not assert) latency on the shared test server: a fresh acquire (read, grant, one
 * transaction), a renewal (read, one keep-alive), a release (read, one transaction) and inspect,
 * against a plain put of a small value on the same server. Every operation must succeed.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EtcdLatencyReportTest {

  private static final int WARMUP = 100;
  private static final int ITERATIONS = 1000;

  @Test
  void printMedianLatencies() throws Exception {
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    String prefix = "latency-" + HexFormat.of().formatHex(b);
    String[] endpoints = EtcdServers.endpointList().toArray(String[]::new);
    try (EtcdLeaseStore store = EtcdLeaseStore.builder(endpoints).keyPrefix(prefix).build();
        Client client = Client.builder().endpoints(endpoints).build()) {
      HolderId holder = HolderId.generate();
      Duration ttl = Duration.ofSeconds(10);
      long[] acquire = new long[ITERATIONS];
      long[] release = new long[ITERATIONS];
      for (int i = -WARMUP; i < ITERATIONS; i++) {
        String name = "acq-" + i;
        long t0 = System.nanoTime();
        LeaseGrant g = store.acquireOrRenew(name, holder, ttl).orElseThrow();
        long t1 = System.nanoTime();
        assertThat(store.release(name, holder)).isTrue();
        long t2 = System.nanoTime();
        assertThat(g.token()).isPositive();
        if (i >= 0) {
          acquire[i] = t1 - t0;
          release[i] = t2 - t1;
        }
      }
      long token = store.acquireOrRenew("renew", holder, ttl).orElseThrow().token();
      long[] renew = new long[ITERATIONS];
      long[] inspect = new long[ITERATIONS];
      for (int i = -WARMUP; i < ITERATIONS; i++) {
        long t0 = System.nanoTime();
        LeaseGrant g = store.acquireOrRenew("renew", holder, ttl).orElseThrow();
        long t1 = System.nanoTime();
        store.inspect("renew");
        long t2 = System.nanoTime();
        assertThat(g.token()).isEqualTo(token);
        if (i >= 0) {
          renew[i] = t1 - t0;
          inspect[i] = t2 - t1;
        }
      }
      ByteSequence key = ByteSequence.from(prefix + "/plain", StandardCharsets.UTF_8);
      long[] put = new long[ITERATIONS];
      for (int i = -WARMUP; i < ITERATIONS; i++) {
        ByteSequence value = ByteSequence.from("value-" + i, StandardCharsets.UTF_8);
        long t0 = System.nanoTime();
        client.getKVClient().put(key, value).get(10, TimeUnit.SECONDS);
        long t1 = System.nanoTime();
        if (i >= 0) {
          put[i] = t1 - t0;
        }
      }
      System.out.println("etcd latency over " + ITERATIONS + " iterations ("
          + EtcdServers.shared().description() + "), median / p90 / p99 in ms:");
      report("acquire (get + grant + txn)", acquire);
      report("renew (get + keepAliveOnce)", renew);
      report("release (get + txn)", release);
      report("inspect (txn read + timeToLive)", inspect);
      report("plain put", put);
    }
  }

  private static void report(String what, long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    System.out.printf("  %-34s %7.3f / %7.3f / %7.3f%n", what, ms(s[s.length / 2]),
        ms(s[(int) (s.length * 0.9)]), ms(s[(int) (s.length * 0.99)]));
  }

  private static double ms(long nanos) {
    return nanos / 1_000_000.0;
  }
}
