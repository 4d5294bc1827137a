package dev.leases.tck.remote;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A line-protocol server on a free loopback port: one daemon thread per connection hands the
 * connection's reader and writer to a {@link Handler}. For test infrastructure that other JVMs
 * reach (the store server, the benchmark's fenced resource); no authentication, loopback only.
 */
public final class LoopbackLineServer implements AutoCloseable {

  /** Serves one connection until it ends; {@code out} is shared with nobody else. */
  @FunctionalInterface
  public interface Handler {
    /** Serves one connection; returns when it is done with it. */
    void serve(BufferedReader in, Writer out) throws IOException;
  }

  private final ServerSocket socket;
  private final Handler handler;
  private final Set<Socket> clients = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private LoopbackLineServer(String name, Handler handler) throws IOException {
    this.handler = handler;
    this.socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, name + "-" + socket.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  /** Starts serving; {@code name} prefixes the server's thread names. */
  public static LoopbackLineServer start(String name, Handler handler) throws IOException {
    return new LoopbackLineServer(name, handler);
  }

  /** The loopback port it listens on. */
  public int port() {
    return socket.getLocalPort();
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket s = socket.accept();
        s.setTcpNoDelay(true);
        clients.add(s);
        Thread t = new Thread(() -> serve(s), Thread.currentThread().getName() + "-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        // closed: the loop ends; otherwise accept the next connection
      }
    }
  }

  private void serve(Socket s) {
    try (s;
        BufferedReader in = new BufferedReader(
            new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        Writer out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8)) {
      handler.serve(in, out);
    } catch (IOException | RuntimeException e) {
      // the client went away (killed on purpose in some scenarios)
    } finally {
      clients.remove(s);
    }
  }

  /** Stops accepting and drops every connection (clients then fail their calls). */
  @Override
  public void close() {
    closed = true;
    try {
      socket.close();
    } catch (IOException e) {
      // closing anyway
    }
    for (Socket s : clients) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
