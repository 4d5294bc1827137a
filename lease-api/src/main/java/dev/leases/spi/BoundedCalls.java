package dev.leases.spi;

import dev.leases.LeaseStoreUnavailableException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Calls to a lease store, each bounded in time, on a pool of at most {@code maxInFlight} daemon
 * threads with no queue: a call that times out is interrupted and abandoned, and while
 * {@code maxInFlight} calls (abandoned ones included) still run, a new call is refused at once with
 * {@link LeaseStoreUnavailableException} — so a hung store cannot pile up threads or calls. Used by
 * the leader loop and the exactly-once runner; {@link #shared()} is the process-wide pool.
 */
public final class BoundedCalls implements AutoCloseable {

  /** Calls in flight at once on the {@linkplain #shared() shared} pool. */
  public static final int SHARED_MAX_IN_FLIGHT = 64;

  private static final class Shared {
    static final BoundedCalls INSTANCE = new BoundedCalls("leases-call-", SHARED_MAX_IN_FLIGHT);
  }

  private final ThreadPoolExecutor pool;
  private final int maxInFlight;

  private BoundedCalls(String threadPrefix, int maxInFlight) {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be at least 1, was " + maxInFlight);
    }
    this.maxInFlight = maxInFlight;
    AtomicInteger n = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(0, maxInFlight, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, threadPrefix + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  /** The process-wide pool ({@value #SHARED_MAX_IN_FLIGHT} threads at most, started lazily). */
  public static BoundedCalls shared() {
    return Shared.INSTANCE;
  }

  /** A pool of its own, for a component that must not share; {@link #close()} it. */
  public static BoundedCalls create(String threadPrefix, int maxInFlight) {
    return new BoundedCalls(Objects.requireNonNull(threadPrefix, "threadPrefix"), maxInFlight);
  }

  /**
   * Runs {@code call} and waits at most {@code timeout} for it.
   *
   * @throws LeaseStoreUnavailableException if it timed out or was interrupted (outcome unknown),
   *     failed with a checked exception, or was refused because the pool is full (nothing sent);
   *     unchecked exceptions and errors of the call are rethrown as they are
   */
  public <R> R call(Callable<R> call, Duration timeout) {
    Future<R> future = submit(call);
    try {
      return future.get(Math.max(1, timeout.toNanos()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw new LeaseStoreUnavailableException(
          "the lease store did not answer within " + timeout + "; outcome unknown", e);
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException(
          "interrupted while waiting for the lease store; outcome unknown", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new LeaseStoreUnavailableException("the lease store call failed; outcome unknown",
          cause);
    }
  }

  /**
   * Starts {@code call} without waiting; the caller bounds the wait (and cancels the future when
   * it gives up).
   *
   * @throws LeaseStoreUnavailableException if the pool is full: nothing was sent
   */
  public <R> Future<R> submit(Callable<R> call) {
    try {
      return pool.submit(call);
    } catch (RejectedExecutionException e) {
      throw new LeaseStoreUnavailableException(maxInFlight + " lease store calls are already in"
          + " flight (slow calls, or calls abandoned at their deadline, still running): the store"
          + " is not answering in time or more calls run at once than that; this call was not"
          + " sent", e);
    }
  }

  /** Stops the pool's threads; the {@linkplain #shared() shared} pool cannot be closed. */
  @Override
  public void close() {
    if (this != Shared.INSTANCE) {
      pool.shutdownNow();
    }
  }
}
