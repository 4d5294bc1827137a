package dev.leases.leader;

import dev.leases.LeaseStoreUnavailableException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** How the loop calls its store: with a deadline in production, directly in unit tests. */
interface StoreCalls extends AutoCloseable {

  <T> T call(Callable<T> call, Duration timeout) throws Exception;

  @Override
  void close();

  /** Runs the call on the caller's thread, without a deadline (for scripted stores in tests). */
  static StoreCalls direct() {
    return new StoreCalls() {
      @Override
      public <T> T call(Callable<T> call, Duration timeout) throws Exception {
        return call.call();
      }

      @Override
      public void close() {}
    };
  }

  /**
   * Runs each call on one daemon thread and gives up after the timeout, so that a store that hangs
   * cannot keep the loop from standing down. A call that timed out may still complete later; its
   * result is ignored.
   */
  static StoreCalls bounded(String threadName) {
    ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      return t;
    });
    return new StoreCalls() {
      @Override
      public <T> T call(Callable<T> call, Duration timeout) throws Exception {
        Future<T> future = executor.submit(call);
        try {
          return future.get(Math.max(1, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          future.cancel(true);
          throw new LeaseStoreUnavailableException(
              "the lease store did not answer within " + timeout + "; outcome unknown", e);
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof Exception ex) {
            throw ex;
          }
          throw e;
        }
      }

      @Override
      public void close() {
        executor.shutdownNow();
      }
    };
  }
}
