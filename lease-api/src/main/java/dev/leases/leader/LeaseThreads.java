package dev.leases.leader;

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
 * a scheduler for the loops' steps and a pool for listener callbacks (store calls run on
 * {@link dev.leases.spi.BoundedCalls#shared()}). All daemon threads, started lazily.
 */
final class LeaseThreads {

  private LeaseThreads() {}

  private static final class Holder {
    static final ScheduledExecutorService SCHEDULER = scheduler();
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

  static ExecutorService sharedListeners() {
    return Holder.LISTENERS;
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
