package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A measurement, not a benchmark and not an assertion about speed: median and p99 round trip of
 * acquire-or-renew (renewal path and fresh-grant path) against a plain {@code SET} on the same
 * server, same machine. Written to {@code target/redis-latency.txt} and the test output.
 */
class LatencyReportTest {

  private static final int WARMUP = 300;
  private static final int N = 2000;

  @Test
  void measureAcquireOrRenewAgainstPlainSet() throws IOException {
    String uri = RedisServers.sharedUri();
    try (RedisLeaseStore store = RedisLeaseStore.builder(uri).build();
        RedisAdmin admin = RedisAdmin.connect(uri)) {
      String n = "latency-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      Duration ttl = Duration.ofSeconds(30);
      long token = store.acquireOrRenew(n, a, ttl).orElseThrow().token();

      long[] renew = new long[N];
      long[] fresh = new long[N];
      long[] set = new long[N];
      for (int i = -WARMUP; i < N; i++) {
        long t0 = System.nanoTime();
        long t = store.acquireOrRenew(n, a, ttl).orElseThrow().token();
        long t1 = System.nanoTime();
        assertThat(t).isEqualTo(token);
        if (i >= 0) {
          renew[i] = t1 - t0;
        }
      }
      String key = "latency-plain-" + UUID.randomUUID();
      for (int i = -WARMUP; i < N; i++) {
        long t0 = System.nanoTime();
        admin.sync().set(key, "v");
        long t1 = System.nanoTime();
        if (i >= 0) {
          set[i] = t1 - t0;
        }
      }
      String m = "latency-fresh-" + UUID.randomUUID();
      long last = 0;
      for (int i = -WARMUP; i < N; i++) {
        HolderId h = HolderId.generate();
        long t0 = System.nanoTime();
        long t = store.acquireOrRenew(m, h, ttl).orElseThrow().token();
        long t1 = System.nanoTime();
        assertThat(t).isGreaterThan(last);
        last = t;
        store.release(m, h);
        if (i >= 0) {
          fresh[i] = t1 - t0;
        }
      }
      String report = String.format(Locale.ROOT,
          "Redis round trips over %d iterations (after %d warm-up), same loopback server, µs:%n"
              + "  acquireOrRenew, renewal path : median %7.1f  p99 %7.1f%n"
              + "  acquireOrRenew, new grant    : median %7.1f  p99 %7.1f%n"
              + "  plain SET (Lettuce sync)     : median %7.1f  p99 %7.1f%n",
          N, WARMUP, median(renew), p99(renew), median(fresh), p99(fresh), median(set), p99(set));
      System.out.print(report);
      Path out = Path.of("target", "redis-latency.txt");
      Files.createDirectories(out.getParent());
      Files.writeString(out, report);
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
