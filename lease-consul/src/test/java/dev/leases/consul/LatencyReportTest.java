package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.option.ImmutablePutOptions;

/**
 * A measurement, not a benchmark and not an assertion about speed: median and p99 round trips of
 * a renewal, a new grant and a release (a store built from the URL, as recommended) against a plain
 * KV PUT and GET through a kiwiproject client, on the same agent (a dev agent: Raft in memory, no fsync). Written to
 * {@code target/consul-latency.txt} and the test output.
 */
class LatencyReportTest {

  private static final int WARMUP = 100;
  private static final int N = 500;

  @Test
  void measureLeaseCallsAgainstPlainKvCalls() throws IOException {
    String url = ConsulServers.sharedUrl();
    Consul client = Consul.builder().withUrl(url).withPing(false).build();
    try (ConsulLeaseStore store = ConsulLeaseStore.builder(url).build()) {
      KeyValueClient kv = client.keyValueClient();
      Duration ttl = Duration.ofSeconds(30);

      String n = "latency-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      long token = store.acquireOrRenew(n, a, ttl).orElseThrow().token();
      long[] renew = new long[N];
      for (int i = -WARMUP; i < N; i++) {
        long t0 = System.nanoTime();
        long t = store.acquireOrRenew(n, a, ttl).orElseThrow().token();
        long t1 = System.nanoTime();
        assertThat(t).isEqualTo(token);
        if (i >= 0) {
          renew[i] = t1 - t0;
        }
      }
      store.release(n, a);

      String m = "latency-fresh-" + UUID.randomUUID();
      long[] fresh = new long[N];
      long[] release = new long[N];
      long last = 0;
      for (int i = -WARMUP; i < N; i++) {
        HolderId h = HolderId.generate();
        long t0 = System.nanoTime();
        long t = store.acquireOrRenew(m, h, ttl).orElseThrow().token();
        long t1 = System.nanoTime();
        assertThat(store.release(m, h)).isTrue();
        long t2 = System.nanoTime();
        assertThat(t).isGreaterThan(last);
        last = t;
        if (i >= 0) {
          fresh[i] = t1 - t0;
          release[i] = t2 - t1;
        }
      }

      String key = "latency-plain/" + UUID.randomUUID();
      long[] put = new long[N];
      long[] get = new long[N];
      for (int i = -WARMUP; i < N; i++) {
        long t0 = System.nanoTime();
        kv.putValue(key, "v" + i, 0, ImmutablePutOptions.builder().build(), StandardCharsets.UTF_8);
        long t1 = System.nanoTime();
        kv.getValue(key);
        long t2 = System.nanoTime();
        if (i >= 0) {
          put[i] = t1 - t0;
          get[i] = t2 - t1;
        }
      }

      String report = String.format(Locale.ROOT,
          "Consul round trips over %d iterations (after %d warm-up), same loopback dev agent, µs:%n"
              + "  acquireOrRenew, renewal    (session renew + txn)         : median %7.1f  p99 %7.1f%n"
              + "  acquireOrRenew, new grant  (kv get + session create + txn): median %7.1f  p99 %7.1f%n"
              + "  release                    (txn + session destroy)       : median %7.1f  p99 %7.1f%n"
              + "  plain KV PUT (kiwiproject client, same agent)            : median %7.1f  p99 %7.1f%n"
              + "  plain KV GET (kiwiproject client, same agent)            : median %7.1f  p99 %7.1f%n",
          N, WARMUP, median(renew), p99(renew), median(fresh), p99(fresh), median(release),
          p99(release), median(put), p99(put), median(get), p99(get));
      System.out.print(report);
      Path out = Path.of("target", "consul-latency.txt");
      Files.createDirectories(out.getParent());
      Files.writeString(out, report);
    } finally {
      client.destroy();
    }
  }

  private static double median(long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    return s[s.length / 2] / 1000.0;
  }

  private static double p99(long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    return s[(int) (s.length * 0.99)] / 1000.0;
  }
}
