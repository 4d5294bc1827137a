package dev.leases.leader;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers one loop's listener events off the renewal path: in order, one at a time, on an executor
 * shared by many loops. A callback that blocks delays only later events of the same loop, never a
 * renewal; {@link #checkSlow} lets the loop name a callback that has been running too long.
 */
final class ListenerQueue {

  private static final Logger log = LoggerFactory.getLogger(LeaderLoop.class);

  private final String name;
  private final List<LeaderListener> listeners;
  private final Executor executor;
  private final ArrayDeque<Event> queue = new ArrayDeque<>();
  private boolean draining;
  private Event running;
  private long runningSinceNanos;
  private boolean runningReported;

  private record Event(String description, Consumer<LeaderListener> call) {}

  ListenerQueue(String name, List<LeaderListener> listeners, Executor executor) {
    this.name = name;
    this.listeners = listeners;
    this.executor = executor;
  }

  /** Queues an event for every listener; returns at once. */
  void post(String description, Consumer<LeaderListener> call) {
    if (listeners.isEmpty()) {
      return;
    }
    boolean start;
    synchronized (this) {
      queue.add(new Event(description, call));
      start = !draining;
      draining = true;
    }
    if (start) {
      try {
        executor.execute(this::drain);
      } catch (RejectedExecutionException e) {
        log.warn("lease '{}': the listener executor refused work; {} is not delivered", name,
            description);
        synchronized (this) {
          queue.clear();
          draining = false;
        }
      }
    }
  }

  private void drain() {
    while (true) {
      Event e;
      synchronized (this) {
        e = queue.poll();
        if (e == null) {
          draining = false;
          running = null;
          return;
        }
        running = e;
        runningSinceNanos = System.nanoTime();
        runningReported = false;
      }
      for (LeaderListener l : listeners) {
        try {
          e.call.accept(l);
        } catch (Throwable ex) { // an Error too: a callback must not stop this loop's later events
          log.warn("lease '{}': listener {} threw from {}", name, l, e.description, ex);
        }
      }
      long tookMs = (System.nanoTime() - runningSinceNanos) / 1_000_000L;
      boolean reported;
      synchronized (this) {
        reported = runningReported;
        running = null;
      }
      if (reported) {
        log.warn("lease '{}': listener callback {} returned after {} ms", name, e.description,
            tookMs);
      }
    }
  }

  /**
   * Logs at WARN, once per callback, when the callback now running has run longer than
   * {@code thresholdNanos}. Called from the loop's steps, so a stuck listener is named while it is
   * stuck.
   */
  void checkSlow(long thresholdNanos) {
    String description;
    long ms;
    synchronized (this) {
      if (running == null || runningReported) {
        return;
      }
      long ran = System.nanoTime() - runningSinceNanos;
      if (ran < thresholdNanos) {
        return;
      }
      runningReported = true;
      description = running.description;
      ms = ran / 1_000_000L;
    }
    log.warn("lease '{}': listener callback {} of {} has been running for {} ms; renewals go on,"
        + " but this loop's later events wait behind it: hand long work to your own executor",
        name, description, listeners, ms);
  }

  /** Events not yet delivered, including the one running. */
  synchronized int pending() {
    return queue.size() + (running != null ? 1 : 0);
  }
}
