package dev.leases.etcd;

import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.Response;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.netty.handler.ssl.SslContext;
import java.net.ConnectException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;

/**
 * Bounded jetcd calls. One operation (an acquire, a release, ...) gets one {@link Budget} of
 * {@code callTimeout}; every future is awaited with what is left of it and cancelled when it runs
 * out. Calls that are safe to repeat are retried while etcd answers {@code UNAVAILABLE} (no leader,
 * leader changed, a member went away) and budget remains. Every failure becomes a
 * {@link LeaseStoreUnavailableException} ("outcome unknown"), or a {@link LeaseStoreClosedException}
 * once the store is closed.
 */
final class Calls {

  private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  private static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

  /** How messages name the endpoints of a client someone else built. */
  static final String CLIENT_ENDPOINTS = "the client's endpoints";

  /** How many threads run the calls and callbacks of a client built from endpoints. */
  static final int OWN_THREADS = 4;

  /** The names of those threads begin with this, then the client's number and the thread's. */
  static final String OWN_THREAD_PREFIX = "leases-etcd-grpc-";

  private static final AtomicInteger OWN_POOLS = new AtomicInteger();

  private final Duration timeout;
  private final BooleanSupplier closed;
  private final String endpoints;
  private final String owner;
  private final @Nullable String user;
  private final @Nullable String keyPrefix;
  /** The newest etcd revision an answer to these calls carried; 0 before the first answer. */
  private final AtomicLong seenRevision = new AtomicLong();

  /**
   * @param endpoints how failure messages name the etcd endpoints, e.g. {@code http://host:2379}
   */
  Calls(Duration timeout, BooleanSupplier closed, String endpoints) {
    this(timeout, closed, endpoints, "EtcdLeaseStore", null, null);
  }

  /**
   * @param owner the class whose calls these are, named by the "closed" message
   * @param user the etcd user the client authenticates as, named by "access denied" messages; null
   *     if none or unknown
   * @param keyPrefix the key prefix whose range the calls touch, named by those messages
   */
  Calls(Duration timeout, BooleanSupplier closed, String endpoints, String owner,
      @Nullable String user, @Nullable String keyPrefix) {
    this.timeout = timeout;
    this.closed = closed;
    this.endpoints = endpoints;
    this.owner = owner;
    this.user = user;
    this.keyPrefix = keyPrefix;
  }

  /**
   * A client for {@code endpoints} whose every call is bounded: a gRPC deadline of
   * {@code callTimeout} on each call (the authentication call included), no retries of its own
   * (the caller retries within its budget), and no waiting for a ready connection, so refused
   * connections and failed TLS handshakes fail at once.
   *
   * <p>jetcd's own tasks and every call's gRPC callbacks run on {@code threads} (see
   * {@link #ownThreads}), not on jetcd's and gRPC's unbounded cached pools, so the thread count does
   * not grow with the number of calls in flight. Nothing the store runs there blocks: callers wait
   * on their futures on their own threads, and callbacks only record an answer or send the next
   * call. The caller shuts {@code threads} down after closing the client (jetcd does not).
   *
   * @param user null for no authentication; else with {@code password}
   * @param ssl null for plaintext
   */
  static Client ownClient(List<URI> endpoints, Duration callTimeout, @Nullable String user,
      byte @Nullable [] password, @Nullable SslContext ssl, ExecutorService threads) {
    ClientBuilder b = Client.builder()
        .endpoints(endpoints.toArray(URI[]::new))
        .executorService(threads)
        .interceptor(new DeadlineInterceptor(callTimeout), new ExecutorInterceptor(threads))
        .connectTimeout(callTimeout)
        .retryMaxAttempts(0) // the caller retries itself, within callTimeout
        .waitForReady(false); // fail at once when no member accepts connections
    if (user != null) {
      b.user(ByteSequence.from(user, StandardCharsets.UTF_8)).password(ByteSequence.from(password));
    }
    if (ssl != null) {
      b.sslContext(ssl);
    }
    return b.build();
  }

  /**
   * A fixed pool of {@value #OWN_THREADS} daemon threads named {@value #OWN_THREAD_PREFIX}{@code
   * <client>-<thread>} for one client built from endpoints; its queue is unbounded, so submitting
   * never blocks or fails while it runs.
   */
  static ExecutorService ownThreads() {
    int pool = OWN_POOLS.incrementAndGet();
    AtomicInteger thread = new AtomicInteger();
    return Executors.newFixedThreadPool(OWN_THREADS, r -> {
      Thread t = new Thread(r, OWN_THREAD_PREFIX + pool + "-" + thread.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** How messages name {@code endpoints}. */
  static String describe(List<URI> endpoints) {
    return endpoints.stream().map(URI::toString).collect(Collectors.joining(", "));
  }

  Duration timeout() {
    return timeout;
  }

  /** A fresh budget of {@code callTimeout} for one operation. */
  Budget budget() {
    return new Budget(System.nanoTime() + timeout.toNanos());
  }

  /** The time left for one operation. */
  static final class Budget {
    private final long deadline;

    private Budget(long deadline) {
      this.deadline = deadline;
    }

    long leftNanos() {
      return deadline - System.nanoTime();
    }
  }

  /**
   * The newest etcd revision any answer to these calls carried (its header's), 0 before the first:
   * every change etcd makes after that answer has a larger revision.
   */
  long seenRevision() {
    return seenRevision.get();
  }

  private <T> T seen(T answer) {
    if (answer instanceof Response r && r.getHeader() != null) {
      seenRevision.accumulateAndGet(r.getHeader().getRevision(), Math::max);
    }
    return answer;
  }

  /** Awaits one call; never repeats it. */
  <T> T once(Supplier<CompletableFuture<T>> call, Budget budget, String what) {
    return attempt(call, budget, what, false);
  }

  /**
   * Awaits a call that is safe to repeat, repeating it while etcd is briefly unavailable. A call
   * that could not be sent because no endpoint accepts connections is not repeated: waiting out the
   * budget would only delay the answer.
   */
  <T> T retrying(Supplier<CompletableFuture<T>> call, Budget budget, String what) {
    long backoff = FIRST_BACKOFF_NANOS;
    boolean repeat = false;
    while (true) {
      try {
        return attempt(call, budget, what, repeat);
      } catch (LeaseStoreUnavailableException e) {
        if (code(e) != ErrorCode.UNAVAILABLE || refusal(e) != null || handshake(e) != null
            || budget.leftNanos() <= backoff) {
          throw e;
        }
      }
      repeat = true;
      try {
        TimeUnit.NANOSECONDS.sleep(backoff);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LeaseStoreUnavailableException("interrupted while retrying etcd call '" + what
            + "'; outcome unknown", e);
      }
      backoff = Math.min(backoff * 2, MAX_BACKOFF_NANOS);
    }
  }

  /**
   * Sends every call at once (one round trip for all of them, not one each), then awaits each as
   * {@link #retrying} would. {@code onError} turns a failure of one call into its answer (or
   * rethrows it); once one throws, the calls still pending are cancelled.
   */
  <T> List<@Nullable T> retryingAll(List<Supplier<CompletableFuture<T>>> calls, Budget budget,
      String what, Function<LeaseStoreUnavailableException, @Nullable T> onError) {
    List<AtomicReference<CompletableFuture<T>>> started = new ArrayList<>();
    for (Supplier<CompletableFuture<T>> c : calls) {
      CompletableFuture<T> f;
      try {
        f = c.get();
      } catch (RuntimeException e) {
        f = CompletableFuture.failedFuture(e);
      }
      started.add(new AtomicReference<>(f));
    }
    List<@Nullable T> answers = new ArrayList<>(calls.size());
    try {
      for (int i = 0; i < calls.size(); i++) {
        AtomicReference<CompletableFuture<T>> first = started.get(i);
        Supplier<CompletableFuture<T>> call = calls.get(i);
        try {
          answers.add(retrying(() -> {
            CompletableFuture<T> f = first.getAndSet(null);
            return f != null ? f : call.get();
          }, budget, what));
        } catch (LeaseStoreUnavailableException e) {
          answers.add(onError.apply(e));
        }
      }
    } catch (RuntimeException e) {
      for (AtomicReference<CompletableFuture<T>> f : started) {
        CompletableFuture<T> pending = f.getAndSet(null);
        if (pending != null) {
          pending.cancel(true);
        }
      }
      throw e;
    }
    return answers;
  }

  private <T> T attempt(Supplier<CompletableFuture<T>> call, Budget budget, String what,
      boolean repeat) {
    if (closed.getAsBoolean()) {
      throw closedException();
    }
    long left = budget.leftNanos();
    if (left <= 0) {
      throw timedOut(what, null);
    }
    CompletableFuture<T> future;
    try {
      future = call.get();
    } catch (RuntimeException e) {
      throw failed(what, e, repeat);
    }
    try {
      try {
        return seen(future.get(left, TimeUnit.NANOSECONDS));
      } catch (ExecutionException e) {
        if (!staleToken(e.getCause())) {
          throw e;
        }
        // etcd refused the request before applying it; jetcd dropped the token, so the repeat
        // authenticates afresh (safe for every call: nothing was applied)
        long again = budget.leftNanos();
        if (again <= 0) {
          throw timedOut(what, e.getCause());
        }
        future = call.get();
        return seen(future.get(again, TimeUnit.NANOSECONDS));
      }
    } catch (TimeoutException e) {
      future.cancel(true);
      throw timedOut(what, e);
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while waiting for etcd call '" + what
          + "'; outcome unknown", e);
    } catch (ExecutionException | CompletionException | CancellationException e) {
      throw failed(what, e.getCause() != null ? e.getCause() : e, repeat);
    }
  }

  private RuntimeException failed(String what, Throwable cause, boolean repeat) {
    if (closed.getAsBoolean()) {
      return closedException();
    }
    ErrorCode code = code(cause);
    if (code == ErrorCode.DEADLINE_EXCEEDED) {
      // the gRPC deadline of a client we built (also callTimeout) fired before our own wait did
      return timedOut(what, cause);
    }
    RuntimeException denied = denied(what, cause, code);
    if (denied != null) {
      return denied;
    }
    SSLException tls = code == ErrorCode.UNAVAILABLE ? handshake(cause) : null;
    if (tls != null) {
      return new LeaseStoreUnavailableException("the TLS handshake with etcd at " + endpoints
          + " failed (" + tls.getMessage() + "), so '" + what + "' was not sent"
          + (repeat ? "; an earlier attempt's outcome is unknown" : "") + ". Check that the trust"
          + " certificate is the authority that signed the server's certificate, that the server's"
          + " certificate names the endpoint's host (subject alternative name), and, if the server"
          + " demands client certificates, that a client certificate and key are given and signed by"
          + " an authority the server trusts", cause);
    }
    ConnectException refused = code == ErrorCode.UNAVAILABLE ? refusal(cause) : null;
    if (refused != null) {
      return new LeaseStoreUnavailableException("etcd at " + endpoints + " refused connections ("
          + refused.getMessage() + "), so '" + what + "' was not sent"
          + (repeat ? "; an earlier attempt's outcome is unknown" : "")
          + ". Check that etcd is running and listening there, or fix the endpoints", cause);
    }
    return new LeaseStoreUnavailableException("etcd call '" + what + "' failed"
        + (code != null ? " with " + code : "") + ": " + cause.getMessage()
        + "; outcome unknown", cause);
  }

  /**
   * An {@link EtcdAccessDeniedException} if etcd refused the call for who is calling (a missing
   * permission, rejected or missing credentials), else null.
   */
  private @Nullable RuntimeException denied(String what, Throwable cause,
      @Nullable ErrorCode code) {
    String who = user != null ? "etcd user '" + user + "'" : "the client's etcd user";
    String range = keyPrefix == null ? "the store's key prefix"
        : "the key range prefix '" + keyPrefix + "/' (from '" + keyPrefix + "/' to '" + keyPrefix
            + "0')";
    if (code == ErrorCode.PERMISSION_DENIED) {
      return new EtcdAccessDeniedException(who + " lacks permission for '" + what + "' (etcd: "
          + etcdMessage(cause) + "). A lease holder needs a role with readwrite on " + range
          + ", an observer read on it (EtcdRoles gives the etcdctl commands and applies them);"
          + " EtcdFence also needs write on the guarded resource keys", cause);
    }
    String text = chainText(cause);
    if (text.contains("authentication failed")) {
      return new EtcdAccessDeniedException("etcd rejected the credentials of " + who + " ("
          + etcdMessage(cause) + "), so '" + what + "' was not sent. Check the user name and the"
          + " password (and its source: password file or environment variable)", cause);
    }
    if (text.contains("user name is empty") || text.contains("user name not found")) {
      return new EtcdAccessDeniedException("etcd at " + endpoints + " has authentication enabled"
          + " and " + (user == null ? "no user was given" : who + " does not exist") + ", so '"
          + what + "' was refused. Give the store an etcd user and password (builder user(...),"
          + " or the factory settings user and passwordFile/passwordEnv)", cause);
    }
    return null;
  }

  /** The etcd/gRPC message nearest the root of {@code t}'s chain (never a request's content). */
  private static String etcdMessage(Throwable t) {
    String message = null;
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c.getMessage() != null) {
        message = c.getMessage();
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return message == null ? t.toString() : message;
  }

  private static String chainText(@Nullable Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      b.append(c.getMessage()).append('\n');
      if (c.getCause() == c) {
        break;
      }
    }
    return b.toString();
  }

  /**
   * Whether etcd refused a request because the client's auth token expired ({@code --auth-token-ttl}
   * of idleness) or predates a change of the auth store: jetcd then drops its token, and a repeat
   * authenticates again.
   */
  static boolean staleToken(@Nullable Throwable t) {
    String text = chainText(t);
    return text.contains("invalid auth token") || text.contains("revision of auth store is old");
  }

  private RuntimeException timedOut(String what, @Nullable Throwable cause) {
    if (closed.getAsBoolean()) {
      return closedException();
    }
    return new LeaseStoreUnavailableException("etcd did not answer '" + what + "' within the call"
        + " timeout of " + timeout + "; outcome unknown. Check that the endpoints are reachable and"
        + " the cluster has a leader, or raise callTimeout", cause);
  }

  private LeaseStoreClosedException closedException() {
    return new LeaseStoreClosedException("this " + owner + " is closed; open a new one");
  }

  /**
   * The connection failure in {@code t}'s cause chain, or null. gRPC fails a call with
   * {@code UNAVAILABLE} caused by it when no endpoint accepted a connection (and the client does
   * not wait for one to become ready): the call never left this process.
   */
  static @Nullable ConnectException refusal(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof ConnectException e) {
        return e;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return null;
  }

  /** The TLS failure in {@code t}'s cause chain, or null: the call never left this process. */
  static @Nullable SSLException handshake(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SSLException e) {
        return e;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return null;
  }

  /** The etcd/gRPC error code anywhere in {@code t}'s cause chain, or null. */
  static @Nullable ErrorCode code(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof EtcdException e) {
        return e.getErrorCode();
      }
      if (c instanceof StatusRuntimeException || c instanceof StatusException) {
        return EtcdExceptionFactory.toEtcdException(Status.fromThrowable(c)).getErrorCode();
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return null;
  }

  /**
   * Runs every call's callbacks (and its call credentials' work) on {@code executor} instead of the
   * channel's default executor, an unbounded cached pool.
   */
  static final class ExecutorInterceptor implements ClientInterceptor {
    private final Executor executor;

    ExecutorInterceptor(Executor executor) {
      this.executor = executor;
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
        CallOptions options, Channel next) {
      return next.newCall(method, options.withExecutor(executor));
    }
  }

  /**
   * Gives every gRPC call of a client this store built a deadline of {@code timeout}, except the
   * long-lived watch streams. Without deadlines a call to an unreachable member waits forever
   * (jetcd waits for the channel to be ready) and keeps its stream, buffers and threads.
   */
  static final class DeadlineInterceptor implements ClientInterceptor {
    private final long timeoutNanos;

    DeadlineInterceptor(Duration timeout) {
      this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
        CallOptions options, Channel next) {
      CallOptions o = options;
      if (o.getDeadline() == null && !method.getFullMethodName().startsWith("etcdserverpb.Watch/")) {
        o = o.withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS);
      }
      return next.newCall(method, o);
    }
  }
}
