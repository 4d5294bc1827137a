package dev.leases.once;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.spi.BoundedCalls;
import dev.leases.spi.LocalDeadline;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store calls of one {@link ExactlyOnce}, each bounded by the call timeout, and the background
 * renewal of the leases its runs hold.
 *
 * <p>Threads: one daemon scheduler ticks every held lease's renewal (every {@code ttl/3}) and times
 * calls out; store calls run on a daemon pool of at most {@link #MAX_CALLS} threads with no queue,
 * started as needed and ended after 30 s idle. A call that times out is interrupted and abandoned;
 * while {@link #MAX_CALLS} calls (abandoned ones included) still run, a new call is refused at once
 * (a renewal refused so counts as failed), so hung calls cannot pile up.
 */
final class LeaseKeeper implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

  /**
   * As many as the shared pool's: the bound costs nothing until calls pile up. Every concurrent run
   * of the runner needs one slot at a time, so a small bound refused ordinary load (4 let a dozen
   * concurrent runs over an 80 ms store fail with "the store is not answering").
   */
  static final int MAX_CALLS = BoundedCalls.SHARED_MAX_IN_FLIGHT;

  private final LeaseStore store;
  private final LeaseClock clock;
  private final Duration ttl;
  private final Duration renewInterval;
  private final Duration margin;
  private final Duration callTimeout;
  private final ScheduledExecutorService scheduler;
  private final BoundedCalls calls;

  LeaseKeeper(LeaseStore store, LeaseClock clock, Duration ttl, Duration renewInterval,
      Duration margin, Duration callTimeout) {
    this.store = store;
    this.clock = clock;
    this.ttl = ttl;
    this.renewInterval = renewInterval;
    this.margin = margin;
    this.callTimeout = callTimeout;
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, r -> daemon(r,
        "leases-once-renewal"));
    s.setRemoveOnCancelPolicy(true);
    this.scheduler = s;
    this.calls = BoundedCalls.create("leases-once-call-", MAX_CALLS);
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** The holdings started and not closed. */
  private final Set<Held> active = ConcurrentHashMap.newKeySet();

  /**
   * Ends every holding for good (revoke on the way in): each is lost, stops renewing, and answers
   * {@link Held#revoked()}. Returns how many there were.
   */
  int revokeAll() {
    int n = 0;
    for (Held h : active) {
      h.revoke();
      n++;
    }
    return n;
  }

  /** Runs {@code call} on the call pool and waits at most {@code timeout} for it. */
  <R> R call(Callable<R> call, Duration timeout) {
    return calls.call(call, timeout);
  }

  /** {@link #call} with the configured call timeout. */
  <R> R call(Callable<R> call) {
    return call(call, callTimeout);
  }

  /**
   * One bounded acquire-or-renew, timed from its send; empty when another holder has the lease.
   */
  Optional<Held> acquire(String lease, HolderId holder) {
    long sendMono = clock.monotonicNanos();
    long sendWall = clock.wallMillis();
    Optional<LeaseGrant> grant = call(() -> store.acquireOrRenew(lease, holder, ttl));
    return grant.map(g -> new Held(g, sendMono, sendWall));
  }

  /**
   * A lease this keeper renews in the background until {@link #close()}: every renewal is bounded
   * by the call timeout and by the time left before the local deadline. A renewal that fails, is
   * refused, or comes back with another token (the tenure lapsed in between) ends the holding for
   * good and stops renewing.
   */
  final class Held implements AutoCloseable {
    private final LeaseGrant grant;
    private volatile LocalDeadline deadline;
    private volatile boolean lost;
    private volatile boolean revoked;
    private volatile boolean closed;
    private ScheduledFuture<?> next; // guarded by this
    private CompletableFuture<?> inFlight; // the renewal on its way, if any; guarded by this

    private Held(LeaseGrant grant, long sendMono, long sendWall) {
      this.grant = grant;
      extend(grant, sendMono, sendWall);
    }

    LeaseGrant grant() {
      return grant;
    }

    /** Starts renewing in the background. */
    Held start() {
      active.add(this);
      schedule();
      return this;
    }

    /** Whether {@link #revokeAll()} ended this holding. */
    boolean revoked() {
      return revoked;
    }

    private void revoke() {
      revoked = true;
      lose("revoked (restore or explicit call): a copy of this process may hold it");
      synchronized (this) {
        if (next != null) {
          next.cancel(false);
        }
      }
    }

    boolean isHeld() {
      return !lost && deadline.isBefore(clock);
    }

    private void extend(LeaseGrant g, long sendMono, long sendWall) {
      deadline = LocalDeadline.after(sendMono, sendWall, g.ttl(), margin);
    }

    private synchronized void schedule() {
      if (closed || lost) {
        return;
      }
      try {
        next = scheduler.schedule(this::renew, renewInterval.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        lose("the runner was closed");
      }
    }

    private void renew() {
      if (closed || lost) {
        return;
      }
      long sendMono = clock.monotonicNanos();
      long sendWall = clock.wallMillis();
      LocalDeadline d = deadline;
      long left = d.nanosLeft(sendMono);
      if (!d.isBefore(sendMono, sendWall)) {
        lose("the local deadline passed before a renewal could be sent");
        return;
      }
      Duration timeout = Duration.ofNanos(Math.min(left, callTimeout.toNanos()));
      CompletableFuture<Optional<LeaseGrant>> answer = new CompletableFuture<>();
      synchronized (this) {
        if (closed) {
          return;
        }
        inFlight = answer;
      }
      Future<?> sent;
      try {
        sent = calls.submit(() -> {
          try {
            answer.complete(store.acquireOrRenew(grant.name(), grant.holder(), ttl));
          } catch (Throwable t) {
            answer.completeExceptionally(t);
          }
          return null;
        });
      } catch (LeaseStoreUnavailableException e) {
        lose("earlier lease store calls are still hanging; renewal not sent");
        return;
      }
      ScheduledFuture<?> timer = scheduler.schedule(() -> {
        if (answer.completeExceptionally(new TimeoutException())) {
          sent.cancel(true);
        }
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
      answer.whenComplete((result, error) -> {
        timer.cancel(false);
        if (error != null) {
          lose("renewal failed or timed out after " + timeout + " (unknown is no): " + error);
        } else if (result.isEmpty()) {
          lose("renewal refused: another holder has the lease");
        } else if (result.get().token() != grant.token()) {
          lose("renewal came back with token " + result.get().token() + ": the tenure under "
              + grant.token() + " lapsed");
        } else {
          extend(result.get(), sendMono, sendWall);
          schedule();
        }
      });
    }

    private void lose(String why) {
      if (!lost && !closed) {
        log.warn("lease '{}' (token {}): no longer held: {}", grant.name(), grant.token(), why);
      }
      lost = true;
    }

    /**
     * Stops renewing (it does not release the lease) and waits for a renewal on its way to answer
     * or time out (at most the call timeout), so that a release sent after this returns is not
     * overtaken by it: a renewal that reaches the store after the release re-acquires the lease.
     */
    @Override
    public void close() {
      CompletableFuture<?> renewal;
      active.remove(this);
      synchronized (this) {
        closed = true;
        if (next != null) {
          next.cancel(false);
        }
        renewal = inFlight;
      }
      if (renewal == null) {
        return;
      }
      try {
        renewal.get(callTimeout.toNanos(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException | TimeoutException e) {
        // failed or unanswered: nothing more to wait for
      }
    }
  }

  @Override
  public void close() {
    scheduler.shutdownNow();
    calls.close();
  }
}
