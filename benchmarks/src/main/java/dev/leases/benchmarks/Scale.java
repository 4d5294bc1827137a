package dev.leases.benchmarks;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.tck.CountingLeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One process holding many leases: acquire them all, then renew them all once per TTL/3 for a few
 * rounds with a small thread pool, counting store calls per round and checking that every renewal
 * came back with the token of the first grant (the lease stayed held, same tenure). The first
 * round acquires with a 2-minute TTL; the renewal rounds use {@code max(2 s, 6 x that round)},
 * rounded up to whole seconds, so that a round fits in a third of it with room to spare.
 */
final class Scale {

  /** The renewal TTL is at least this many times the acquire round (and at least 2 s). */
  static final int SIZING = 6;

  /**
   * @param renewRoundMs time of each renewal round
   * @param lost renewals that came back empty, with another token, or failed
   * @param late rounds that did not finish within a renew interval (TTL/3)
   */
  record Result(int leases, Duration ttl, int threads, double acquireRoundMs,
      List<Double> renewRoundMs, long callsPerRound, int lost, int late) {
    boolean allHeld() {
      return lost == 0;
    }
  }

  private Scale() {}

  static Result run(Backend backend, int count, int rounds, int threads, String runId)
      throws Exception {
    HolderId holder = HolderId.generate();
    List<String> names = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      names.add("bench-scale-" + runId + "-" + count + "-" + i);
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (CountingLeaseStore store = new CountingLeaseStore(backend.openStore())) {
      // Acquire all with a long TTL, timing the round; the renewal TTL is sized from it.
      long[] tokens = new long[count];
      AtomicInteger lost = new AtomicInteger();
      long a0 = System.nanoTime();
      round(pool, threads, names, store, holder, Bench.fit(Duration.ofMinutes(2), store), tokens,
          lost);
      double acquireMs = (System.nanoTime() - a0) / 1e6;
      Duration ttl = Bench.fit(Duration.ofSeconds(Math.max(2,
          (long) Math.ceil(acquireMs * SIZING / 1000))), store);
      Duration interval = ttl.dividedBy(3);
      List<Double> renewMs = new ArrayList<>();
      long callsPerRound = 0;
      int late = 0;
      long start = System.nanoTime();
      for (int r = 0; r < rounds; r++) {
        long wait = start + interval.toNanos() * r - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        long c0 = store.calls();
        long t0 = System.nanoTime();
        round(pool, threads, names, store, holder, ttl, tokens, lost);
        long took = System.nanoTime() - t0;
        renewMs.add(took / 1e6);
        callsPerRound = store.calls() - c0;
        if (took > interval.toNanos()) {
          late++;
        }
      }
      round(pool, threads, names, store, holder, null, tokens, new AtomicInteger()); // release
      return new Result(count, ttl, threads, acquireMs, renewMs, callsPerRound,
          lost.get(), late);
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * One call per name, split over {@code threads} slices: acquire-or-renew with {@code ttl}, or
   * release when {@code ttl} is null. {@code tokens[i] == 0} records the first grant; a later grant
   * with another token, an empty answer or an error counts as lost.
   */
  private static void round(ExecutorService pool, int threads, List<String> names, LeaseStore store,
      HolderId holder, Duration ttl, long[] tokens, AtomicInteger lost) throws Exception {
    List<Future<?>> parts = new ArrayList<>();
    int n = names.size();
    for (int s = 0; s < threads; s++) {
      int from = (int) ((long) n * s / threads);
      int to = (int) ((long) n * (s + 1) / threads);
      parts.add(pool.submit(() -> {
        for (int i = from; i < to; i++) {
          try {
            if (ttl == null) {
              store.release(names.get(i), holder);
              continue;
            }
            Optional<LeaseGrant> g = store.acquireOrRenew(names.get(i), holder, ttl);
            if (g.isEmpty() || (tokens[i] != 0 && tokens[i] != g.get().token())) {
              lost.incrementAndGet();
            }
            if (g.isPresent()) {
              tokens[i] = g.get().token();
            }
          } catch (RuntimeException e) {
            lost.incrementAndGet();
          }
        }
        return null;
      }));
    }
    for (Future<?> f : parts) {
      f.get();
    }
  }
}
