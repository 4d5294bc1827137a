package dev.leases.consul;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URL;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An HTTP reverse proxy in front of a Consul agent that counts the requests it forwards: every
 * request a store sends through it, whichever client (kiwiproject or the direct OkHttp one) sent
 * it, is one count.
 */
final class CountingHttpProxy implements AutoCloseable {

  private final HttpServer server;
  private final ExecutorService threads = Executors.newFixedThreadPool(16, r -> {
    Thread t = new Thread(r, "counting-proxy");
    t.setDaemon(true);
    return t;
  });
  private final String target;
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong changedAnswers = new AtomicLong();
  private final Map<String, AtomicLong> kinds = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, Runnable> hooks = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, AtomicLong> answered = new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicInteger inFlight =
      new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger maxInFlight =
      new java.util.concurrent.atomic.AtomicInteger();

  CountingHttpProxy(String target) throws IOException {
    this.target = target;
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    server.createContext("/", this::forward);
    server.setExecutor(threads);
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  long requests() {
    return requests.get();
  }

  /**
   * Blocking queries ({@code ?index=N}) answered with another index: those that ended because
   * something they watch changed, not because their wait ran out.
   */
  long changedAnswers() {
    return changedAnswers.get();
  }

  /**
   * Requests forwarded since the last call, by kind: the method and the first three segments of
   * the path ({@code PUT /v1/session/renew}, {@code PUT /v1/txn}, {@code GET /v1/kv/leases}).
   */
  Map<String, Long> kindsAndReset() {
    Map<String, Long> m = new java.util.TreeMap<>();
    kinds.forEach((k, v) -> m.put(k, v.getAndSet(0)));
    m.values().removeIf(v -> v == 0);
    return m;
  }

  /**
   * Runs {@code hook} (once, on the proxy's thread) before forwarding the next request of
   * {@code kind} (see {@link #kindsAndReset}); the request waits for it. Other requests go on.
   */
  void beforeNext(String kind, Runnable hook) {
    hooks.put(kind, hook);
  }

  /** Requests of {@code kind} answered so far (their answer forwarded to the client). */
  long answered(String kind) {
    AtomicLong n = answered.get(kind);
    return n == null ? 0 : n.get();
  }

  private static String kind(String method, String path) {
    String[] parts = path.split("/", 5);
    return method + " " + String.join("/", java.util.Arrays.copyOf(parts, Math.min(4, parts.length)));
  }

  /** Bytes of the answers forwarded so far (bodies only). */
  long answerBytes() {
    return bytes.get();
  }

  /**
   * Requests being forwarded now (at most the proxy's 16 threads; more wait for one). A blocking
   * query counts while Consul holds it.
   */
  int inFlight() {
    return inFlight.get();
  }

  /** The most requests in flight at once since the last {@link #resetMaxInFlight()}. */
  int maxInFlight() {
    return maxInFlight.get();
  }

  void resetMaxInFlight() {
    maxInFlight.set(inFlight.get());
  }

  private void forward(HttpExchange ex) throws IOException {
    requests.incrementAndGet();
    String kind = kind(ex.getRequestMethod(), ex.getRequestURI().getPath());
    kinds.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    Runnable hook = hooks.remove(kind);
    if (hook != null) {
      hook.run();
    }
    maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
    try (ex) {
      HttpURLConnection c = (HttpURLConnection) new URL(target + ex.getRequestURI()).openConnection();
      c.setRequestMethod(ex.getRequestMethod());
      c.setConnectTimeout(5000);
      c.setReadTimeout(60000);
      for (Map.Entry<String, List<String>> h : ex.getRequestHeaders().entrySet()) {
        if (!h.getKey().equalsIgnoreCase("Host") && !h.getKey().equalsIgnoreCase("Content-length")
            && !h.getKey().equalsIgnoreCase("Transfer-encoding")) {
          c.setRequestProperty(h.getKey(), String.join(",", h.getValue()));
        }
      }
      byte[] body = ex.getRequestBody().readAllBytes();
      if (body.length > 0 || ex.getRequestMethod().equals("PUT")) {
        c.setDoOutput(true);
        try (OutputStream out = c.getOutputStream()) {
          out.write(body);
        }
      }
      int code = c.getResponseCode();
      InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream();
      byte[] answer = in == null ? new byte[0] : in.readAllBytes();
      for (Map.Entry<String, List<String>> h : c.getHeaderFields().entrySet()) {
        if (h.getKey() != null && !h.getKey().equalsIgnoreCase("Content-length")
            && !h.getKey().equalsIgnoreCase("Transfer-encoding")) {
          ex.getResponseHeaders().put(h.getKey(), h.getValue());
        }
      }
      ex.sendResponseHeaders(code, answer.length == 0 ? -1 : answer.length);
      if (answer.length > 0) {
        ex.getResponseBody().write(answer);
      }
      bytes.addAndGet(answer.length);
      answered.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
      String asked = queryIndex(ex.getRequestURI().getRawQuery());
      String answered = c.getHeaderField("X-Consul-Index");
      if (asked != null && answered != null && !asked.equals(answered.trim())) {
        changedAnswers.incrementAndGet();
      }
    } finally {
      inFlight.decrementAndGet();
    }
  }

  private static String queryIndex(String query) {
    if (query != null) {
      for (String part : query.split("&")) {
        if (part.startsWith("index=")) {
          return part.substring("index=".length());
        }
      }
    }
    return null;
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
