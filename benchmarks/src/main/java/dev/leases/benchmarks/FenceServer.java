package dev.leases.benchmarks;

import dev.leases.FencedOutException;
import dev.leases.tck.ReferenceFencedResource;
import dev.leases.tck.remote.LoopbackLineServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.util.ArrayList;
import java.util.List;

/**
 * The failover benchmark's fenced resource: a {@link ReferenceFencedResource} in the harness JVM
 * behind a loopback line server, so that every write of every worker JVM is timestamped by one clock
 * ({@link System#nanoTime()} of this JVM, taken under the same lock as the fence check).
 *
 * <p>Protocol, one line each way: {@code WRITE <token> <worker> <seq>} answered by {@code OK} or
 * {@code REJECTED <highest token>}. A worker's {@code seq} grows with each write, odd for the
 * first write of a unit of work and even for its last ({@link WriteEvent#begin()}).
 *
 * <p>{@linkplain #unfenced Unfenced}, for mechanisms that have no token (the peers of
 * {@link PeerMechanism}): every write is accepted whatever token it carries, as a plain resource
 * would, and the event is recorded under a <em>tenure</em> number that the resource assigns itself
 * — 1 for the first writer, one more each time a write comes from another worker than the write
 * before it. So {@link GapAnalysis} applies one rule to both kinds: the successor's first write is
 * the first by another worker under a larger number, and every later write by the old leader is a
 * stale write, here always accepted.
 */
final class FenceServer implements AutoCloseable {

  /** One write attempt as the resource saw it. */
  record WriteEvent(long atNanos, String worker, long seq, long token, boolean accepted) {
    /** Whether this was the first write of a unit, after which the worker works, then writes again. */
    boolean begin() {
      return (seq & 1) == 1;
    }
  }

  private final ReferenceFencedResource<String> resource;
  private final boolean fenced;
  private final List<WriteEvent> events = new ArrayList<>();
  private final LoopbackLineServer server;
  private long tenure;
  private String lastWriter;

  FenceServer(String name) throws IOException {
    this(name, true);
  }

  private FenceServer(String name, boolean fenced) throws IOException {
    this.resource = new ReferenceFencedResource<>(name);
    this.fenced = fenced;
    this.server = LoopbackLineServer.start("fence-server", this::serve);
  }

  /** A resource that checks no token: see the class comment. */
  static FenceServer unfenced(String name) throws IOException {
    return new FenceServer(name, false);
  }

  int port() {
    return server.port();
  }

  /** Applies one write; public to the package so tests can drive the resource without sockets. */
  WriteEvent write(long token, String worker, long seq) {
    synchronized (events) {
      long at = System.nanoTime();
      if (!fenced) {
        if (!worker.equals(lastWriter)) {
          tenure++;
          lastWriter = worker;
        }
        WriteEvent ev = new WriteEvent(at, worker, seq, tenure, true);
        events.add(ev);
        events.notifyAll();
        return ev;
      }
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

  private void serve(BufferedReader in, Writer out) throws IOException {
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
  }

  @Override
  public void close() {
    server.close();
  }
}
