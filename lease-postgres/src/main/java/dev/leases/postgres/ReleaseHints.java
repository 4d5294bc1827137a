package dev.leases.postgres;

import dev.leases.LeaseStore.Subscription;
import dev.leases.spi.ReleaseListeners;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release hints for one store: subscribers by lease name and, when a dedicated connection is
 * available, one daemon thread that {@code LISTEN}s on the store's channel and dispatches each
 * notification (payload = lease name) to that name's subscribers.
 *
 * <p>The thread starts with the first subscription and stops on {@link #close()}. After a lost
 * connection it reconnects with backoff and then wakes <em>every</em> subscriber, because releases
 * sent while it was away are lost. Without a connection only this store's own releases are
 * dispatched ({@link #dispatch}).
 *
 * <p>Bounded: every socket read on the LISTEN connection has the call timeout plus one second as its
 * network timeout (waiting for notifications polls in {@value #POLL_MILLIS} ms steps), so a silent
 * network ends in a failure and a reconnect, not a hang. {@link #close()} aborts the connection
 * (closing its socket under a blocked read) and joins the thread. Opening a connection cannot be
 * aborted: the supplier must bound it itself (the default one does, with pgjdbc's
 * {@code connectTimeout} and {@code socketTimeout}); close waits for it up to
 * {@link #joinBound}.
 */
final class ReleaseHints implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReleaseHints.class);

  private static final int POLL_MILLIS = 250;
  private static final long HEALTH_CHECK_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final long MIN_BACKOFF_MILLIS = 100;
  private static final long MAX_BACKOFF_MILLIS = 5_000;

  /** pgjdbc's {@code connectTimeout} for the default LISTEN connections, in seconds. */
  static final int CONNECT_TIMEOUT_SECONDS = 5;

  private final String channel;
  private final @Nullable Supplier<Connection> connections; // null: no LISTEN
  private final Duration callTimeout;
  private final ReleaseListeners subscribers = new ReleaseListeners();
  private final Object lock = new Object();
  private @Nullable Thread thread; // guarded by lock
  private volatile @Nullable Connection current; // the LISTEN connection while open, for close() to abort
  private volatile boolean listening;
  private volatile boolean closed;

  /**
   * @param callTimeout bounds each statement on the LISTEN connection (its socket reads by this plus
   *     one second), and how long the first subscription waits for LISTEN
   */
  ReleaseHints(String channel, @Nullable Supplier<Connection> connections, Duration callTimeout) {
    this.channel = channel;
    this.connections = connections;
    this.callTimeout = callTimeout;
  }

  /**
   * How long {@link #close()} waits for the thread: its longest step that an abort cannot cut
   * short, opening a connection with the default supplier (the connect timeout, then the login's
   * reads under {@link #loginTimeoutSeconds}, twice: pgjdbc retries without SSL when the SSL
   * request times out), and a margin.
   */
  Duration joinBound() {
    return Duration.ofSeconds(CONNECT_TIMEOUT_SECONDS + 2L * loginTimeoutSeconds(callTimeout))
        .plus(Jdbc.NETWORK_GRACE);
  }

  /** pgjdbc's {@code socketTimeout} for the default LISTEN connections: whole seconds, rounded up. */
  static int loginTimeoutSeconds(Duration callTimeout) {
    return (int) ((Jdbc.networkTimeoutMillis(callTimeout) + 999L) / 1000);
  }

  /** Whether a LISTEN connection delivers releases (including this store's own). */
  boolean listens() {
    return connections != null;
  }

  /**
   * Registers {@code listener}. The first call starts the LISTEN thread and waits (at most the
   * configured time) until it listens, so that a release after this returns is not missed while the
   * connection is healthy.
   */
  Subscription subscribe(String name, Runnable listener) {
    Subscription subscription = subscribers.add(name, listener);
    if (connections != null) {
      startAndAwaitListening();
    }
    return subscription;
  }

  /** Runs {@code name}'s subscribers on the calling thread; a failing subscriber is logged. */
  void dispatch(String name) {
    subscribers.fire(name);
  }

  private void dispatchAll() {
    subscribers.fireAll();
  }

  private void startAndAwaitListening() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      if (thread == null) {
        thread = new Thread(this::run, "leases-postgres-listen-" + channel);
        thread.setDaemon(true);
        thread.start();
      }
      long deadline = System.nanoTime() + callTimeout.toNanos();
      while (!listening && !closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          log.warn("LISTEN on channel '{}' is not established yet; release hints start when it is",
              channel);
          return;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private void run() {
    long backoff = MIN_BACKOFF_MILLIS;
    boolean connectedBefore = false;
    while (!closed) {
      try (Connection c = connections.get()) {
        if (c == null) {
          throw new IllegalStateException("the listen connection supplier returned null");
        }
        current = c;
        if (closed) {
          break; // close() may have looked for a connection to abort before this one existed
        }
        c.setNetworkTimeout(Jdbc.DIRECT, Jdbc.networkTimeoutMillis(callTimeout));
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          Jdbc.bound(s, callTimeout);
          s.execute("LISTEN \"" + channel + "\"");
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        setListening(true);
        backoff = MIN_BACKOFF_MILLIS;
        if (connectedBefore) {
          log.info("LISTEN on '{}' re-established; waking every subscriber", channel);
          dispatchAll(); // releases sent while we were away are lost
        }
        connectedBefore = true;
        long lastTraffic = System.nanoTime();
        while (!closed) {
          PGNotification[] notes = pg.getNotifications(POLL_MILLIS);
          if (notes != null && notes.length > 0) {
            lastTraffic = System.nanoTime();
            for (PGNotification n : notes) {
              dispatch(n.getParameter());
            }
          } else if (System.nanoTime() - lastTraffic > HEALTH_CHECK_NANOS) {
            healthCheck(c);
            lastTraffic = System.nanoTime();
          }
        }
      } catch (SQLException | RuntimeException e) {
        current = null;
        setListening(false);
        if (closed) {
          break;
        }
        log.warn("LISTEN connection on '{}' failed ({}); reconnecting in {} ms", channel,
            e.toString(), backoff);
        if (!sleep(backoff)) {
          break;
        }
        backoff = Math.min(MAX_BACKOFF_MILLIS, backoff * 2);
      }
    }
    current = null;
    setListening(false);
  }

  private void healthCheck(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      Jdbc.bound(s, callTimeout);
      s.execute("SELECT 1");
    }
  }

  private void setListening(boolean value) {
    synchronized (lock) {
      listening = value;
      lock.notifyAll();
    }
  }

  private boolean sleep(long millis) {
    synchronized (lock) {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      while (!closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return true;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          return false;
        }
      }
      return false;
    }
  }

  /**
   * Stops the thread: aborts its connection and waits for it to end, up to {@link #joinBound} (a
   * subscriber's listener that blocks, or a supplier that does not bound its connect, can hold it
   * longer; that is logged). Then drops every subscriber.
   */
  @Override
  public void close() {
    Thread t;
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
      t = thread;
    }
    Connection c = current;
    if (c != null) {
      try {
        c.abort(Jdbc.DIRECT);
      } catch (SQLException | RuntimeException e) {
        log.debug("aborting the LISTEN connection on '{}' failed", channel, e);
      }
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(joinBound().toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (t.isAlive()) {
        log.warn("the LISTEN thread on '{}' did not end within {} after close; it ends when its"
            + " current step (opening a connection, or a subscriber's listener) returns", channel,
            joinBound());
      }
    }
    subscribers.clear();
  }
}
