package dev.leases.consul;

import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import okhttp3.Call;
import okhttp3.Interceptor;
import okhttp3.Response;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.ConsulException;

/**
 * Runs a unit of work against Consul with a hard deadline, on a bounded pool of its own.
 *
 * <p>The kiwiproject client is synchronous, so each operation runs on one of at most
 * {@code maxThreads} daemon threads (idle ones end after 30 s) and the caller stops waiting at the
 * deadline. At most {@code 4 x maxThreads} operations wait for a thread; beyond that a call fails at
 * once with {@link LeaseStoreUnavailableException}, so that a slow agent cannot make abandoned calls
 * pile up. A call still queued at its deadline is dropped unsent.
 *
 * <p>An abandoned operation stops as soon as the HTTP layer lets it: on clients that carry
 * {@link #INTERCEPTOR} (those the store builds) every request gets the call's remaining time as its
 * connect, read and write timeout, the request in flight is cancelled at the deadline, and no
 * further request starts. On other clients the request in flight runs until that client's own
 * timeouts, holding its pool thread; {@link #ensureLive()} keeps the operation from starting
 * writes after its deadline.
 */
final class ConsulCalls {

  /** Threads per pool unless the store's builder says otherwise. */
  static final int DEFAULT_MAX_THREADS = 16;
  /** Longest accepted {@code maxThreads}. */
  static final int MAX_THREADS = 256;
  /** Thread names start with this (the store's other threads too). */
  static final String THREAD_PREFIX = "leases-consul-";

  private static final AtomicInteger POOLS = new AtomicInteger();
  private static final ThreadLocal<Deadline> CURRENT = new ThreadLocal<>();

  /**
   * Bounds each request of the operation running on this thread by its remaining time and lets the
   * caller cancel it; passes other requests (asynchronous ones, other threads') through unchanged.
   * Must be an application interceptor.
   */
  /** The header with which Consul marks a listing that left out what the token may not read. */
  static final String FILTERED_BY_ACLS = "X-Consul-Results-Filtered-By-ACLs";

  /**
   * Whether an answer to the operation running on this thread so far carried
   * {@link #FILTERED_BY_ACLS}: only on clients that carry {@link #INTERCEPTOR} (those the store
   * builds); false elsewhere.
   */
  static boolean answersFilteredByAcls() {
    Deadline d = CURRENT.get();
    return d != null && d.filteredByAcls;
  }

  static final Interceptor INTERCEPTOR = chain -> {
    Deadline d = CURRENT.get();
    if (d == null) {
      return chain.proceed(chain.request());
    }
    int ms = d.remainingMillisForRequest();
    d.http.add(chain.call());
    try {
      if (d.abandoned) {
        chain.call().cancel();
      }
      okhttp3.Response r = chain
          .withConnectTimeout(bound(chain.connectTimeoutMillis(), ms), TimeUnit.MILLISECONDS)
          .withReadTimeout(bound(chain.readTimeoutMillis(), ms), TimeUnit.MILLISECONDS)
          .withWriteTimeout(bound(chain.writeTimeoutMillis(), ms), TimeUnit.MILLISECONDS)
          .proceed(chain.request());
      if ("true".equalsIgnoreCase(r.header(FILTERED_BY_ACLS))) {
        d.filteredByAcls = true;
      }
      return r;
    } finally {
      d.http.remove(chain.call());
    }
  };

  private final Duration timeout;
  private final String target;
  private final String keyPrefix;
  private final int maxThreads;
  private final int maxQueued;
  private final ThreadPoolExecutor pool;
  private final @Nullable TlsRefusal tlsRefusal;

  /**
   * Asks an https:// agent, on a connection of its own bounded by {@code bound}, whether TLS
   * refuses this client ({@link ConsulTls#refusal}); null if it does not.
   */
  @FunctionalInterface
  interface TlsRefusal {
    @Nullable SSLException ask(Duration bound);
  }

  /** How long {@link TlsRefusal} may take at most, within the call timeout. */
  private static final Duration TLS_REFUSAL_BOUND = Duration.ofSeconds(2);

  ConsulCalls(Duration timeout, String target) {
    this(timeout, target, DEFAULT_MAX_THREADS);
  }

  ConsulCalls(Duration timeout, String target, int maxThreads) {
    this(timeout, target, maxThreads, null);
  }

  /**
   * @param keyPrefix the key prefix of the store or ledger, to say what an ACL token needs when
   *     Consul refuses it; null for other callers
   */
  ConsulCalls(Duration timeout, String target, int maxThreads, String keyPrefix) {
    this(timeout, target, maxThreads, keyPrefix, null);
  }

  /**
   * @param tlsRefusal for an https:// agent: asked after a request failed on a broken connection
   *     (not a timeout, not a refused connection), so that a refused client certificate is named
   *     as such; null for none
   */
  ConsulCalls(Duration timeout, String target, int maxThreads, String keyPrefix,
      @Nullable TlsRefusal tlsRefusal) {
    this.tlsRefusal = tlsRefusal;
    this.timeout = timeout;
    this.target = target;
    this.keyPrefix = keyPrefix;
    this.maxThreads = requireMaxThreads(maxThreads);
    this.maxQueued = 4 * maxThreads;
    String prefix = THREAD_PREFIX + "call-" + POOLS.incrementAndGet() + "-";
    AtomicInteger threads = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(maxThreads, maxThreads, 30, TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(maxQueued), r -> {
          Thread t = new Thread(r, prefix + threads.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    pool.allowCoreThreadTimeOut(true);
  }

  static int requireMaxThreads(int maxThreads) {
    if (maxThreads < 1 || maxThreads > MAX_THREADS) {
      throw new IllegalArgumentException("maxConcurrentCalls must be 1 to " + MAX_THREADS + ", was "
          + maxThreads + "; it bounds the threads a store keeps for calls to Consul");
    }
    return maxThreads;
  }

  Duration timeout() {
    return timeout;
  }

  String target() {
    return target;
  }

  /** Ends the pool's threads; later calls throw {@link LeaseStoreClosedException}. */
  void close() {
    pool.shutdownNow();
  }

  /**
   * Throws if the operation running on this thread has been abandoned by its caller or passed its
   * deadline; a no-op elsewhere. Call before a write, so that an abandoned call changes nothing.
   */
  static void ensureLive() {
    Deadline d = CURRENT.get();
    if (d != null && (d.abandoned || d.remainingNanos() <= 0)) {
      throw new LeaseStoreUnavailableException("the caller stopped waiting for this call at its"
          + " deadline; nothing more is sent", null);
    }
  }

  /** Nanoseconds left for the operation running on this thread; a minute elsewhere. */
  static long remainingNanos() {
    Deadline d = CURRENT.get();
    return d == null ? TimeUnit.MINUTES.toNanos(1) : d.remainingNanos();
  }

  /**
   * Runs {@code work}, waiting at most the timeout (time spent queued included).
   *
   * @throws LeaseStoreUnavailableException on a timeout, an I/O error, an unexpected answer, or
   *     when too many calls are already running or waiting
   */
  <T extends @Nullable Object> T run(String what, Callable<T> work) {
    return run(what, timeout, work);
  }

  /** As {@link #run(String, Callable)}, bounded by {@code timeout} instead of the call timeout. */
  <T extends @Nullable Object> T run(String what, Duration timeout, Callable<T> work) {
    Deadline d = new Deadline(System.nanoTime() + timeout.toNanos());
    Future<T> future;
    try {
      future = pool.submit(() -> d.runOnThisThread(work));
    } catch (RejectedExecutionException e) {
      if (pool.isShutdown()) {
        throw new LeaseStoreClosedException(what + ": closed");
      }
      throw new LeaseStoreUnavailableException(what + ": " + maxThreads + " calls to " + target
          + " are already running and " + maxQueued + " waiting; it is slow or unreachable, so this"
          + " call was not sent. Retry later; raise maxConcurrentCalls only if that many calls at"
          + " once are normal for this process", e);
    }
    try {
      return future.get(d.remainingNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      abandon(d, future);
      throw new LeaseStoreUnavailableException(what + ": " + target + " did not answer within "
          + timeout + "; the outcome is unknown", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      abandon(d, future);
      throw new LeaseStoreUnavailableException(what + ": interrupted while waiting for " + target
          + "; the outcome is unknown", e);
    } catch (ExecutionException e) {
      throw translate(what, e.getCause());
    }
  }

  /**
   * Runs every task of {@code tasks}, at most {@code width} at once: on this thread and on up to
   * {@code width - 1} helpers from the pool, all under the deadline of the operation running on
   * this thread (which must be one of this pool's). Helpers the pool cannot start at once are not
   * waited for: this thread works through whatever is left. The first failure is rethrown after
   * every started task has ended; tasks not started by then are skipped.
   */
  void inParallel(List<? extends Callable<?>> tasks, int width) throws Exception {
    Deadline d = CURRENT.get();
    java.util.Queue<Callable<?>> queue = new java.util.concurrent.ConcurrentLinkedQueue<>(tasks);
    java.util.concurrent.atomic.AtomicReference<Exception> failure =
        new java.util.concurrent.atomic.AtomicReference<>();
    Runnable worker = () -> {
      Callable<?> task;
      while (failure.get() == null && (task = queue.poll()) != null) {
        try {
          task.call();
        } catch (Exception e) {
          failure.compareAndSet(null, e);
        }
      }
    };
    List<Future<?>> helpers = new java.util.ArrayList<>();
    for (int i = 1; i < Math.min(width, tasks.size()); i++) {
      try {
        helpers.add(pool.submit(() -> d.runOnThisThread(() -> {
          worker.run();
          return null;
        })));
      } catch (RejectedExecutionException e) {
        break; // the pool is busy: this thread does the rest
      }
    }
    worker.run();
    for (Future<?> h : helpers) {
      if (!pool.remove((Runnable) h)) { // never started: nothing to wait for
        try {
          h.get(Math.max(1, d == null ? 1 : d.remainingNanos()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
          failure.compareAndSet(null, e.getCause() instanceof Exception x ? x : e);
        } catch (TimeoutException e) {
          failure.compareAndSet(null, new LeaseStoreUnavailableException("a part of this call"
              + " did not end within its deadline; the outcome is unknown", e));
        }
      }
    }
    if (failure.get() != null) {
      throw failure.get();
    }
  }

  /**
   * Starts {@code task} on another thread of the pool, under the deadline of the operation running
   * on this thread (which must be one of this pool's); null when the pool cannot take it now. The
   * caller then either {@link #unfork}s it (and does the work itself) or {@link #join}s it.
   */
  @Nullable Future<?> fork(Callable<?> task) {
    Deadline d = CURRENT.get();
    try {
      return pool.submit(() -> d == null ? task.call() : d.runOnThisThread(task));
    } catch (RejectedExecutionException e) {
      return null;
    }
  }

  /** True if {@code forked} had not started: it never will. */
  boolean unfork(Future<?> forked) {
    return pool.remove((Runnable) forked);
  }

  /**
   * Waits for {@code forked} to end, at most this operation's remaining time; its failure is not
   * rethrown (the task reports its outcome itself).
   */
  void join(Future<?> forked) {
    try {
      forked.get(Math.max(1, remainingNanos()), TimeUnit.NANOSECONDS);
    } catch (ExecutionException | java.util.concurrent.CancellationException e) {
      // reported by the task
    } catch (TimeoutException e) {
      throw new LeaseStoreUnavailableException("a part of this call did not end within its"
          + " deadline; the outcome is unknown", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted; the outcome is unknown", e);
    }
  }

  private void abandon(Deadline d, Future<?> future) {
    d.abandon();
    pool.remove((Runnable) future); // still queued: never runs
    future.cancel(false);
  }

  private static int bound(int configuredMillis, int remainingMillis) {
    return configuredMillis <= 0 ? remainingMillis : Math.min(configuredMillis, remainingMillis);
  }

  /** One operation's deadline, and the HTTP request it has in flight. */
  private static final class Deadline {
    final long deadlineNanos;
    volatile boolean abandoned;
    /** Set when an answer said Consul left out results the token may not read. */
    volatile boolean filteredByAcls;
    /** The requests in flight: one per thread working for this operation. */
    final java.util.Set<Call> http = java.util.concurrent.ConcurrentHashMap.newKeySet();

    Deadline(long deadlineNanos) {
      this.deadlineNanos = deadlineNanos;
    }

    long remainingNanos() {
      return deadlineNanos - System.nanoTime();
    }

    <T extends @Nullable Object> T runOnThisThread(Callable<T> work) throws Exception {
      if (abandoned || remainingNanos() <= 0) {
        // its caller has given up, or is about to: send nothing
        throw new LeaseStoreUnavailableException("the call's deadline passed while it waited for"
            + " a thread (too many calls at once, or Consul is slow); nothing was sent", null);
      }
      CURRENT.set(this);
      try {
        return work.call();
      } finally {
        CURRENT.remove();
      }
    }

    int remainingMillisForRequest() throws InterruptedIOException {
      long ms = TimeUnit.NANOSECONDS.toMillis(remainingNanos());
      if (abandoned || ms <= 0) {
        throw new InterruptedIOException("the call's deadline has passed; request not sent");
      }
      return (int) Math.min(Integer.MAX_VALUE, ms);
    }

    void abandon() {
      abandoned = true;
      http.forEach(Call::cancel);
    }
  }

  private RuntimeException translate(String what, @Nullable Throwable cause) {
    if (cause instanceof IllegalArgumentException || cause instanceof LeaseException
        || cause instanceof IllegalStateException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof ConsulException ce) {
      ConsulAccessDeniedException denied = ConsulPolicies.denied(what, target, keyPrefix, ce);
      if (denied != null) {
        return denied;
      }
      Throwable tls = tlsFailure(ce);
      if (tls != null) {
        return new LeaseStoreUnavailableException(what + ": the TLS handshake with " + target
            + " failed (" + tls + "); nothing was sent. " + tlsAdvice(tls), ce);
      }
      if (ce.getCause() instanceof IOException io) {
        // Under TLS 1.3 a refused client certificate can surface as a broken pipe or a shut-down
        // connection, the agent's alert unread: ask on a connection of its own.
        Duration bound = timeout.compareTo(TLS_REFUSAL_BOUND) < 0 ? timeout : TLS_REFUSAL_BOUND;
        SSLException refused = tlsRefusal == null || io instanceof InterruptedIOException
            || io instanceof ConnectException ? null : tlsRefusal.ask(bound);
        if (refused != null) {
          return new LeaseStoreUnavailableException(what + ": the TLS connection to " + target
              + " failed (" + io + "; on a new connection: " + refused + "); the agent refused"
              + " the client before reading a request. " + tlsAdvice(refused), ce);
        }
        return new LeaseStoreUnavailableException(what + ": " + target + " could not be reached ("
            + io + "); the outcome is unknown", ce);
      }
      String msg = String.valueOf(ce.getMessage());
      String hint = msg.contains("HTTP request to an HTTPS server")
          ? "; this port serves HTTPS: use an https:// URL (and tls(...) or trustCertFile)" : "";
      return new LeaseStoreUnavailableException(what + ": " + target + " answered with an error ("
          + msg + ")" + hint + "; the outcome is unknown", ce);
    }
    return new LeaseStoreUnavailableException(what + ": unexpected failure talking to " + target
        + " (" + cause + "); the outcome is unknown", cause);
  }

  /** What to check after TLS failure {@code tls}: the likely cause first, then the others. */
  private static String tlsAdvice(Throwable tls) {
    String all = "Check that the trust certificate (trustCertFile, tls(trustCert, ...)) is the"
        + " authority that signed the agent's cert_file, that the agent's certificate names the"
        + " URL's host (subject alternative name), that the agent serves HTTPS on that port"
        + " (ports.https), and, if the agent sets verify_incoming, that a client certificate and"
        + " key (clientCertFile, clientKeyFile) signed by an authority in the agent's ca_file are"
        + " given";
    String text = "";
    for (Throwable c = tls; c != null && c.getCause() != c; c = c.getCause()) {
      text += " " + c;
    }
    if (text.contains("PKIX") || text.contains("CertPath")) {
      return "This client does not trust the agent's certificate: it was not signed by the"
          + " authority of trustCertFile (tls(trustCert, ...); without one, the JDK's trust"
          + " store). " + all;
    }
    if (text.contains("SSLPeerUnverifiedException") || text.contains("subject alternative")
        || text.contains("not verified")) {
      return "The agent's certificate does not name the URL's host: use a host name or IP"
          + " address its subject alternative names carry, or reissue it. " + all;
    }
    if (text.contains("certificate_required") || text.contains("bad_certificate")
        || text.contains("unknown_ca") || text.contains("certificate_unknown")) {
      return "The agent refused this client's certificate (or its absence): it sets"
          + " verify_incoming, so give clientCertFile and clientKeyFile (tls(trustCert,"
          + " clientCert, clientKey)) signed by an authority in the agent's ca_file. " + all;
    }
    return all;
  }

  /** The TLS failure in {@code t}'s cause chain, or null. */
  static Throwable tlsFailure(Throwable t) {
    for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
      if (c instanceof javax.net.ssl.SSLException
          || c instanceof java.security.cert.CertificateException) {
        return c;
      }
    }
    return null;
  }
}
