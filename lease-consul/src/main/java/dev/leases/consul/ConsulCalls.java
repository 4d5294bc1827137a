package dev.leases.consul;

import dev.leases.LeaseException;
import dev.leases.LeaseStoreUnavailableException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.kiwiproject.consul.ConsulException;

/**
 * Runs a unit of work against Consul with a hard deadline. The kiwiproject client is synchronous and
 * its only timeouts are the OkHttp client's per-read and per-connect ones (which, for a client the
 * user built, we do not control), so each operation runs on a pooled daemon thread and the caller
 * stops waiting at the deadline. The work itself is not interrupted: it finishes (or fails) on its
 * own, bounded by the client's socket timeouts, and its effect is then unknown to the caller.
 */
final class ConsulCalls {

  private static final AtomicInteger THREADS = new AtomicInteger();

  /** Shared by every store and fence of this JVM; idle threads end after 30 s. */
  private static final ExecutorService POOL = new ThreadPoolExecutor(0, Integer.MAX_VALUE,
      30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
        Thread t = new Thread(r, "leases-consul-call-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
      });

  private final Duration timeout;
  private final String target;

  ConsulCalls(Duration timeout, String target) {
    this.timeout = timeout;
    this.target = target;
  }

  Duration timeout() {
    return timeout;
  }

  String target() {
    return target;
  }

  /**
   * Runs {@code work}, waiting at most the timeout.
   *
   * @throws LeaseStoreUnavailableException on a timeout, an I/O error or an unexpected answer
   */
  <T> T run(String what, Callable<T> work) {
    Future<T> future = POOL.submit(work);
    try {
      return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(false);
      throw new LeaseStoreUnavailableException(what + ": " + target + " did not answer within "
          + timeout + "; the outcome is unknown", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      future.cancel(false);
      throw new LeaseStoreUnavailableException(what + ": interrupted while waiting for " + target
          + "; the outcome is unknown", e);
    } catch (ExecutionException e) {
      throw translate(what, e.getCause());
    }
  }

  private RuntimeException translate(String what, Throwable cause) {
    if (cause instanceof IllegalArgumentException || cause instanceof LeaseException
        || cause instanceof IllegalStateException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof ConsulException ce) {
      if (ce.getCause() instanceof IOException io) {
        return new LeaseStoreUnavailableException(what + ": " + target + " could not be reached ("
            + io + "); the outcome is unknown", ce);
      }
      String msg = String.valueOf(ce.getMessage());
      String hint = msg.contains("Permission denied") || msg.contains("ACL not found")
          ? "; check the ACL token: it needs key:write on the key prefix and session:write on the"
              + " agent's node"
          : "";
      return new LeaseStoreUnavailableException(what + ": " + target + " answered with an error ("
          + msg + ")" + hint + "; the outcome is unknown", ce);
    }
    return new LeaseStoreUnavailableException(what + ": unexpected failure talking to " + target
        + " (" + cause + "); the outcome is unknown", cause);
  }
}
