package dev.leases.consul;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.util.failover.ConsulFailoverInterceptor;
import org.kiwiproject.consul.util.failover.strategy.ConsulFailoverStrategy;

/**
 * A Consul client that the library creates and owns (for stores and ledgers built from a URL):
 * every request bounded by its call's remaining time ({@link ConsulCalls#INTERCEPTOR}), connect,
 * read and write timeouts equal to the call timeout, daemon threads, and a plain OkHttp client on
 * the same connection pool and dispatcher for the requests the kiwiproject client cannot express.
 * {@link Consul#destroy()} cancels the calls of both and shuts them down.
 *
 * <p>Requests with a body (transactions, above all) go out over {@code direct}, whose sockets
 * have Nagle's algorithm off ({@link NoDelaySockets}): the kiwiproject builder cannot set a socket
 * factory, and a transaction of 32 names otherwise waits about 40 ms for the agent's delayed ACK.
 *
 * @param consul the kiwiproject client
 * @param direct OkHttp sharing its pool, dispatcher, timeouts, TLS settings and token
 */
record OwnedClient(Consul consul, OkHttpClient direct) {

  /** The header that carries the ACL token. */
  static final String TOKEN_HEADER = "X-Consul-Token";

  /**
   * Builds the client for {@code url} (checked with {@link #requireUrl}); {@code aclToken} (sent as
   * {@code X-Consul-Token} on every request of both clients, asked for each request) and
   * {@code tls} (for {@code https://}; null: the JDK's default trust store) may be null. The
   * pool keeps up to {@code callThreads} idle connections, one per call thread: a batch has that
   * many requests in flight at once, and with OkHttp's default of five each batch on a TLS agent
   * paid fresh handshakes.
   *
   * @throws IllegalArgumentException if the client cannot be built for that URL or the TLS files
   *     cannot be used
   */
  static OwnedClient open(String url, Duration callTimeout, int callThreads,
      @Nullable AclToken aclToken, @Nullable ConsulTls tls) {
    int ms = (int) Math.max(1, callTimeout.toMillis());
    ConsulTls.Context ssl = tls == null ? null : tls.load();
    // One pool and one set of (daemon) dispatcher threads for the kiwiproject client and for the
    // requests it cannot express; Consul.destroy() cancels their calls and shuts both down. The
    // dispatcher runs only asynchronous requests (a release watch's blocking query per watched
    // name, and reads of absent keys, each bounded by its read timeout); synchronous ones run on
    // the callers' call threads.
    ConnectionPool pool = new ConnectionPool(callThreads, 5, TimeUnit.MINUTES);
    AtomicInteger httpThreads = new AtomicInteger();
    ExecutorService dispatch = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, ConsulCalls.THREAD_PREFIX + "http-"
              + httpThreads.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    OkHttpClient.Builder directBuilder = new OkHttpClient.Builder().connectionPool(pool)
        .socketFactory(NoDelaySockets.FACTORY)
        .dispatcher(new Dispatcher(dispatch)).addInterceptor(ConsulCalls.INTERCEPTOR)
        .connectTimeout(ms, TimeUnit.MILLISECONDS).readTimeout(ms, TimeUnit.MILLISECONDS)
        .writeTimeout(ms, TimeUnit.MILLISECONDS);
    if (aclToken != null) {
      directBuilder.addInterceptor(chain -> chain.proceed(chain.request().newBuilder()
          .header(TOKEN_HEADER, aclToken.getToken()).build()));
    }
    if (ssl != null) {
      directBuilder.sslSocketFactory(ssl.ssl().getSocketFactory(), ssl.trust());
    }
    OkHttpClient direct = directBuilder.build();
    Consul owned;
    try {
      Consul.Builder cb = Consul.builder().withUrl(url).withPing(false)
          .withConnectTimeoutMillis(ms).withReadTimeoutMillis(ms).withWriteTimeoutMillis(ms)
          .withConnectionPool(pool).withExecutorService(dispatch)
          .withConsulFailoverInterceptor(new CallDeadlines(direct));
      if (aclToken != null) {
        cb.withTokenAuth(aclToken);
      }
      if (ssl != null) {
        cb.withSslContext(ssl.ssl()).withTrustManager(ssl.trust());
      }
      owned = cb.build();
    } catch (RuntimeException e) {
      dispatch.shutdownNow();
      throw new IllegalArgumentException("cannot build a Consul client for " + url + ": " + e, e);
    }
    return new OwnedClient(owned, direct);
  }

  /**
   * The only hook the kiwiproject builder offers for an OkHttp application interceptor is its
   * failover interceptor: this one fails over nowhere and applies {@link ConsulCalls#INTERCEPTOR}
   * (each request bounded by its call's remaining time, cancelled when the call is abandoned). A
   * request with a body it sends over {@code direct} instead (whose own interceptor bounds and
   * cancels it the same way), already carrying the token and headers that the kiwiproject client's
   * earlier interceptors added: only there do its sockets have {@code TCP_NODELAY}.
   */
  private static final class CallDeadlines extends ConsulFailoverInterceptor {
    private final OkHttpClient direct;

    CallDeadlines(OkHttpClient direct) {
      super(new ConsulFailoverStrategy() {
        @Override
        public Optional<okhttp3.Request> computeNextStage(okhttp3.Request request) {
          return Optional.of(request);
        }

        @Override
        public Optional<okhttp3.Request> computeNextStage(okhttp3.Request request,
            okhttp3.Response response) {
          return Optional.empty();
        }

        @Override
        public boolean isRequestViable(okhttp3.Request request) {
          return true;
        }

        @Override
        public void markRequestFailed(okhttp3.Request request) {}
      });
      this.direct = direct;
    }

    @Override
    public okhttp3.Response intercept(Chain chain) {
      try {
        if (chain.request().body() != null) {
          return direct.newCall(chain.request()).execute();
        }
        return ConsulCalls.INTERCEPTOR.intercept(chain);
      } catch (java.io.IOException e) {
        // the superclass's signature omits the IOException that OkHttp expects from interceptors
        // (a timeout, a cancelled call): rethrow it unchanged, for the client to report as usual
        throw CallDeadlines.<RuntimeException>rethrow(e);
      }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E rethrow(Throwable t) throws E {
      throw (E) t;
    }
  }

  /**
   * Checks a Consul agent URL: {@code http(s)://host:port}, nothing else; returns it trimmed.
   * Messages show the URL with any user info, query or fragment masked ({@link #redacted}): those
   * are where a token or password would be.
   */
  static String requireUrl(String url) {
    Objects.requireNonNull(url, "url must not be null");
    URI uri;
    try {
      uri = URI.create(url.trim());
    } catch (IllegalArgumentException e) {
      // not e: its message quotes the whole input
      throw new IllegalArgumentException("cannot parse Consul URL '" + redacted(url) + "';"
          + " expected http://host:port, e.g. http://127.0.0.1:8500");
    }
    String scheme = uri.getScheme();
    if (uri.getRawQuery() != null || uri.getRawFragment() != null || uri.getRawUserInfo() != null) {
      throw new IllegalArgumentException("Consul URL '" + redacted(url) + "' must not carry user"
          + " info, a query or a fragment; give the ACL token with aclTokenFile (or aclTokenEnv),"
          + " never in the URL");
    }
    if (scheme == null || !(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null
        || uri.getPort() == 0 || uri.getPort() > 65535) {
      throw new IllegalArgumentException("Consul URL '" + redacted(url) + "' must be"
          + " http://host:port or https://host:port, e.g. http://127.0.0.1:8500");
    }
    return url.trim();
  }

  /**
   * {@code url} with the user info ({@code //...@}) and any query or fragment replaced by
   * {@code ***}.
   */
  static String redacted(String url) {
    String u = url.trim();
    int cut = u.length();
    for (char c : new char[] {'?', '#'}) {
      int i = u.indexOf(c);
      if (i >= 0 && i < cut) {
        cut = i;
      }
    }
    String head = u.substring(0, cut) + (cut < u.length() ? u.charAt(cut) + "***" : "");
    int at = head.lastIndexOf('@');
    int slashes = head.indexOf("//");
    if (at >= 0) {
      head = (slashes >= 0 && slashes < at ? head.substring(0, slashes + 2) : "") + "***"
          + head.substring(at);
    }
    return head;
  }
}
