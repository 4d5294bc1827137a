package dev.leases.leader;

import dev.leases.spi.BoundedCalls;
import java.time.Duration;
import java.util.concurrent.Callable;

/** How the loop calls its store: bounded in production, directly in unit tests. */
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

  /** Runs each call on {@code calls}, which gives up after the timeout (see {@link BoundedCalls}). */
  static StoreCalls bounded(BoundedCalls calls) {
    return calls::call;
  }
}
