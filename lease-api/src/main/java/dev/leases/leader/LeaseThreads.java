package dev.leases.leader;

import dev.leases.LeaseStoreUnavailableException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads every {@link LeaderLoop} of this process shares unless its builder is given others:
 * a scheduler for the loops' steps, a bounded pool for store calls (so that calls abandoned at their
 * deadline cannot pile up), and a pool for listener callbacks. All daemon threads, started lazily.
 */
final class LeaseThreads {

  /** Store calls in flight at once, abandoned ones included; more are refused as unavailable. */
  static final int MAX_CALLS_IN_FLIGHT = 64;

  private LeaseThreads() {}

  private static final class Holder {
    static final ScheduledExecutorService SCHEDULER = scheduler();
    static final ExecutorService CALLS = calls();
    static final ExecutorService LISTENERS = listeners();
  }

  private static ScheduledExecutorService scheduler() {
    int threads = Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors()));
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(threads, daemon("leases-loop-"));
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  static ScheduledExecutorService sharedScheduler() {
    return Holder.SCHEDULER;
  }

  static ExecutorService sharedCalls() {
    return Holder.CALLS;
  }

  static ExecutorService sharedListeners() {
    return Holder.LISTENERS;
  }

  private static ExecutorService calls() {
    return new ThreadPoolExecutor(0, MAX_CALLS_IN_FLIGHT, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), daemon("leases-call-"), (r, executor) -> {
          throw new LeaseStoreUnavailableException(MAX_CALLS_IN_FLIGHT + " lease store calls are"
              + " already in flight (calls abandoned at their deadline still running): the store is"
              + " not answering; outcome unknown", null);
        });
  }

  private static ExecutorService listeners() {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, Integer.MAX_VALUE, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), daemon("leases-listener-"));
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  static ThreadFactory daemon(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
