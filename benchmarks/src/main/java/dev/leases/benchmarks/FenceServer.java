package dev.leases.benchmarks;

import dev.leases.FencedOutException;
import dev.leases.tck.ReferenceFencedResource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The failover benchmark's fenced resource: a {@link ReferenceFencedResource} in the harness JVM
 * behind a loopback line server, so that every write of every worker JVM is timestamped by one clock
 * ({@link System#nanoTime()} of this JVM, taken under the same lock as the fence check).
 *
 * <p>Protocol, one line each way: {@code WRITE <token> <worker> <seq>} answered by {@code OK} or
 * {@code REJECTED <highest token>}.
 */
final class FenceServer implements AutoCloseable {

  /** One write attempt as the resource saw it. */
  record WriteEvent(long atNanos, String worker, long seq, long token, boolean accepted) {}

  private final ReferenceFencedResource<String> resource;
  private final List<WriteEvent> events = new ArrayList<>();
  private final ServerSocket socket;
  private final Set<Socket> clients = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  FenceServer(String name) throws IOException {
    this.resource = new ReferenceFencedResource<>(name);
    this.socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "fence-server-" + socket.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  int port() {
    return socket.getLocalPort();
  }

  /** Applies one write; public to the package so tests can drive the resource without sockets. */
  WriteEvent write(long token, String worker, long seq) {
    synchronized (events) {
      long at = System.nanoTime();
      boolean ok;
      try {
        resource.write(token, worker + "#" + seq);
        ok = true;
      } catch (FencedOutException | IllegalArgumentException e) {
        ok = false;
      }
      WriteEvent ev = new WriteEvent(at, worker, seq, token, ok);
      events.add(ev);
      events.notifyAll();
      return ev;
    }
  }

  List<WriteEvent> events() {
    synchronized (events) {
      return List.copyOf(events);
    }
  }

  /** The latest event, or null. */
  WriteEvent last() {
    synchronized (events) {
      return events.isEmpty() ? null : events.get(events.size() - 1);
    }
  }

  long highestToken() {
    return resource.highestToken();
  }

  /** Waits until an event after index {@code from} matches, or the timeout; returns it or null. */
  WriteEvent await(int from, java.util.function.Predicate<WriteEvent> match, long timeoutNanos)
      throws InterruptedException {
    long end = System.nanoTime() + timeoutNanos;
    synchronized (events) {
      int i = from;
      while (true) {
        for (; i < events.size(); i++) {
          if (match.test(events.get(i))) {
            return events.get(i);
          }
        }
        long left = end - System.nanoTime();
        if (left <= 0) {
          return null;
        }
        events.wait(Math.max(1, left / 1_000_000));
      }
    }
  }

  int size() {
    synchronized (events) {
      return events.size();
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket s = socket.accept();
        s.setTcpNoDelay(true);
        clients.add(s);
        Thread t = new Thread(() -> serve(s), "fence-conn-" + s.getPort());
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void serve(Socket s) {
    try (s;
        BufferedReader in = new BufferedReader(
            new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        Writer out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] f = line.trim().split(" ");
        String reply;
        if (f.length == 4 && f[0].equals("WRITE")) {
          WriteEvent ev = write(Long.parseLong(f[1]), f[2], Long.parseLong(f[3]));
          reply = ev.accepted() ? "OK" : "REJECTED " + resource.highestToken();
        } else {
          reply = "ERROR expected: WRITE <token> <worker> <seq>";
        }
        out.write(reply + "\n");
        out.flush();
      }
    } catch (IOException | RuntimeException e) {
      // the worker went away (killed on purpose in the crash scenario)
    } finally {
      clients.remove(s);
    }
  }

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
