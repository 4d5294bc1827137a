package dev.leases.leader;

import dev.leases.LeaseStoreUnavailableException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** How the loop calls its store: with a deadline in production, directly in unit tests. */
interface StoreCalls {

  <T> T call(Callable<T> call, Duration timeout) throws Exception;

  /** Runs the call on the caller's thread, without a deadline (for scripted stores in tests). */
  static StoreCalls direct() {
    return new StoreCalls() {
      @Override
      public <T> T call(Callable<T> call, Duration timeout) throws Exception {
        return call.call();
      }
    };
  }

  /**
   * Runs each call on {@code pool} and gives up after the timeout, so that a store that hangs cannot
   * keep the loop from standing down. A call that timed out is interrupted and may still complete
   * later; its result is ignored. A bounded pool refuses calls beyond its size (see
   * {@link LeaseThreads#MAX_CALLS_IN_FLIGHT}) as unavailable, so abandoned calls cannot pile up.
   */
  static StoreCalls bounded(ExecutorService pool) {
    return new StoreCalls() {
      @Override
      public <T> T call(Callable<T> call, Duration timeout) throws Exception {
        Future<T> future = pool.submit(call);
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
    };
  }
}
