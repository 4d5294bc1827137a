package dev.leases.benchmarks;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Latency of single lease calls from one thread in this JVM, next to the store's plain write, all
 * interleaved in one loop so they see the same conditions. Each sample {@code i} uses a fresh lease
 * name: holder A acquires it (fresh acquire: the store has no row or key for it yet), renews it
 * (renewal), holder B tries it (contended miss), A releases it (release), B acquires it (takeover:
 * what a follower does on the release hint, on a name the store already knows) and releases it
 * again, untimed; then one plain write.
 *
 * <p>Each timed run of calls on a connection follows an untimed call on the same connection (an
 * inspection before the acquire, a plain write before the plain write): otherwise the first timed
 * call after the other client's turn pays for waking its idle connection's server side (a
 * PostgreSQL backend process, a client's event loop), about 30 µs of a 60-120 µs call on a loaded
 * 2-core machine, which only the acquire and the plain write paid, so that the ratio of every call
 * that came after the acquire was understated.
 *
 * <p>The warm-up ({@link Warmup}) runs at least its minimum of rounds and then on until its time
 * or its cap of rounds is spent, so that the JIT has compiled the store's own code before anything
 * is timed: after 50 rounds the store's code, which runs once per call, was still interpreted
 * while the client library's code that every call shares (and the plain write uses) was compiled,
 * which made a PostgreSQL renewal measure 1.9x the plain write where it measures 1.3x with
 * compiled code (one process on embedded PostgreSQL, 300 samples after 50 and after 3,000 rounds;
 * the caller thread's CPU time per renewal 57 µs and 26 µs).
 */
final class Latency {

  static final String FRESH = "fresh acquire";
  static final String RENEW = "renewal";
  static final String MISS = "contended miss";
  static final String RELEASE = "release";
  static final String TAKEOVER = "takeover acquire";
  static final String PLAIN = "plain write";

  /** Samples in microseconds per operation, what the plain write is, and the warm-up rounds run. */
  record Result(Duration ttl, String plainWhat, Map<String, double[]> micros, int warmupRounds) {}

  /**
   * How many untimed rounds come first: at least {@code minRounds}, then more until {@code time}
   * has passed since the first or {@code maxRounds} have run.
   */
  record Warmup(int minRounds, int maxRounds, Duration time) {
    /**
     * The harness's: at least {@code minRounds}, then up to 5,000 rounds or {@code time} in all.
     * A round of etcd or Consul calls takes milliseconds: within 3 s etcd ran 92 rounds, and its
     * renewal measured 1.8x the plain put, against 1.3x after 1,579 rounds (20 s) in the same hour.
     */
    static Warmup atLeast(int minRounds, Duration time) {
      return new Warmup(minRounds, Math.max(minRounds, 5000), time);
    }

    /** Exactly {@code rounds}. */
    static Warmup exactly(int rounds) {
      return new Warmup(rounds, rounds, Duration.ZERO);
    }

    boolean more(int done, long startNanos) {
      return done < minRounds
          || (done < maxRounds && System.nanoTime() - startNanos < time.toNanos());
    }
  }

  private Latency() {}

  static Result run(Backend backend, int samples, Warmup warmup, String runId) throws Exception {
    Map<String, double[]> micros = new LinkedHashMap<>();
    for (String op : new String[] {FRESH, RENEW, MISS, RELEASE, TAKEOVER, PLAIN}) {
      micros.put(op, new double[samples]);
    }
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    try (Backend.Compared compared = backend.compared()) {
      LeaseStore store = compared.store();
      Backend.PlainWrite plain = compared.plain();
      Duration ttl = Bench.fit(Duration.ofSeconds(30), store);
      long warmupStart = System.nanoTime();
      int warmed = -1; // rounds of warm-up, once they are over
      for (int i = 0; warmed < 0 || i < warmed + samples; i++) {
        if (warmed < 0 && !warmup.more(i, warmupStart)) {
          warmed = i;
        }
        String name = "bench-latency-" + runId + "-" + i;
        int k = warmed < 0 ? -1 : i - warmed;
        store.inspect(name); // untimed: wakes the store's connection (see the class comment)
        long t0 = System.nanoTime();
        Optional<LeaseGrant> g = store.acquireOrRenew(name, a, ttl);
        long t1 = System.nanoTime();
        Optional<LeaseGrant> r = store.acquireOrRenew(name, a, ttl);
        long t2 = System.nanoTime();
        Optional<LeaseGrant> m = store.acquireOrRenew(name, b, ttl);
        long t3 = System.nanoTime();
        boolean released = store.release(name, a);
        long t4 = System.nanoTime();
        Optional<LeaseGrant> taken = store.acquireOrRenew(name, b, ttl);
        long t4b = System.nanoTime();
        boolean freed = store.release(name, b); // untimed
        if (g.isEmpty() || r.isEmpty() || r.get().token() != g.get().token() || m.isPresent()
            || !released || taken.isEmpty() || taken.get().token() <= g.get().token() || !freed) {
          throw new IllegalStateException("unexpected answers from " + backend.name() + " on '"
              + name + "': acquire " + g + ", renew " + r + ", contender " + m + ", release "
              + released + ", takeover " + taken + ", its release " + freed);
        }
        long t5 = 0;
        long t6 = 0;
        if (plain != null) {
          plain.write("bench-plain", i); // untimed, as the inspection before the acquire
          t5 = System.nanoTime();
          plain.write("bench-plain", i);
          t6 = System.nanoTime();
        }
        if (k >= 0) {
          micros.get(FRESH)[k] = (t1 - t0) / 1e3;
          micros.get(RENEW)[k] = (t2 - t1) / 1e3;
          micros.get(MISS)[k] = (t3 - t2) / 1e3;
          micros.get(RELEASE)[k] = (t4 - t3) / 1e3;
          micros.get(TAKEOVER)[k] = (t4b - t4) / 1e3;
          micros.get(PLAIN)[k] = (t6 - t5) / 1e3;
        }
      }
      if (plain == null) {
        micros.remove(PLAIN);
      }
      return new Result(ttl, plain == null ? null : plain.what(), micros, warmed);
    }
  }
}
