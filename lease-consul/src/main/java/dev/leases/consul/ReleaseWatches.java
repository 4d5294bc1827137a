package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.spi.ReleaseListeners;
import java.math.BigInteger;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.async.ConsulResponseCallback;
import org.kiwiproject.consul.model.ConsulResponse;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.option.QueryOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release hints from Consul blocking queries: one long poll ({@code ?index=N&wait=30s}) per watched
 * lease key, re-issued whenever it returns. A listener fires when the key is seen unlocked after it
 * was seen locked (a release, a session invalidated by its TTL, an out-of-band delete), or when an
 * unlocked key changed between two looks. Renewals rewrite the key but leave it locked: no hint.
 *
 * <p>Listeners are kept and run by {@link ReleaseListeners} (one that throws is logged and stays
 * subscribed); the last subscription of a name to close ends its watch. The queries and the
 * listeners run on the Consul client's HTTP threads (daemon threads for the clients the kiwiproject
 * builder makes); retries after an error wait one second on a single daemon timer.
 * Hints can be late or lost (a query in flight while the agent is unreachable fails after its read
 * timeout, about 34 s); callers poll as well.
 */
final class ReleaseWatches {

  private static final Logger log = LoggerFactory.getLogger(ReleaseWatches.class);

  static final int WAIT_SECONDS = 30;
  private static final long RETRY_MS = 1000;
  /** A blocking query that returns sooner than this with an unchanged index is throttled. */
  private static final long QUICK_RETURN_MS = 1000;

  private final KeyValueClient kv;
  private final KeyLayout keys;
  private final ReleaseListeners listeners = new ReleaseListeners();
  private final Map<String, Watch> watches = new HashMap<>(); // by lease name; guarded by this
  private final ScheduledExecutorService timer;
  private volatile boolean closed;

  ReleaseWatches(KeyValueClient kv, KeyLayout keys) {
    this.kv = kv;
    this.keys = keys;
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, "leases-consul-watch-timer");
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    this.timer = t;
  }

  LeaseStore.Subscription subscribe(String name, Runnable listener) {
    LeaseStore.Subscription registration;
    Watch started = null;
    synchronized (this) {
      if (closed) {
        return () -> {};
      }
      registration = listeners.add(name, listener);
      if (!watches.containsKey(name)) {
        started = new Watch(name, keys.keyOf(name));
        watches.put(name, started);
      }
    }
    if (started != null) {
      started.query();
    }
    return () -> {
      synchronized (this) {
        registration.close();
        if (!listeners.names().contains(name)) {
          Watch w = watches.remove(name);
          if (w != null) {
            w.stopped = true;
          }
        }
      }
    };
  }

  /** Number of lease names watched now (for tests). */
  synchronized int size() {
    return watches.size();
  }

  void close() {
    synchronized (this) {
      closed = true;
      watches.values().forEach(w -> w.stopped = true);
      watches.clear();
      listeners.clear();
    }
    timer.shutdownNow();
  }

  private final class Watch implements ConsulResponseCallback<Optional<Value>> {
    final String name;
    final String key;
    volatile boolean stopped;

    // touched by one callback at a time: each query is issued after the previous one completed
    private BigInteger index = BigInteger.ZERO;
    private boolean known;
    private boolean exists;
    private boolean locked;
    private long modifyIndex;
    private long sentAt;

    Watch(String name, String key) {
      this.name = name;
      this.key = key;
    }

    void query() {
      if (stopped || closed) {
        return;
      }
      try {
        sentAt = System.nanoTime();
        kv.getValue(key, QueryOptions.blockSeconds(WAIT_SECONDS, index).build(), this);
      } catch (RuntimeException e) {
        log.debug("release watch on {}: could not issue the query: {}", key, e.toString());
        retryLater(RETRY_MS);
      }
    }

    @Override
    public void onComplete(ConsulResponse<Optional<Value>> response) {
      if (stopped || closed) {
        return;
      }
      Optional<Value> v = response.getResponse() == null ? Optional.empty() : response.getResponse();
      boolean nowExists = v.isPresent();
      boolean nowLocked = v.flatMap(Value::getSession).filter(s -> !s.isEmpty()).isPresent();
      long nowModify = v.map(Value::getModifyIndex).orElse(0L);
      boolean fire = known && !nowLocked
          && (locked || (exists && !nowExists) || (nowExists && nowModify != modifyIndex));
      known = true;
      exists = nowExists;
      locked = nowLocked;
      modifyIndex = nowModify;

      BigInteger previous = index;
      BigInteger next = response.getIndex() == null ? BigInteger.ZERO : response.getIndex();
      if (next.compareTo(previous) < 0) {
        next = BigInteger.ZERO; // the index went backwards (a new cluster): start over
      }
      index = next;
      if (fire) {
        listeners.fire(name);
      }
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentAt);
      if (next.equals(previous) && next.signum() > 0 && tookMs < QUICK_RETURN_MS) {
        retryLater(QUICK_RETURN_MS); // an unchanged index returned at once: do not spin
      } else {
        query();
      }
    }

    @Override
    public void onFailure(Throwable throwable) {
      if (stopped || closed) {
        return;
      }
      log.debug("release watch on {} failed, retrying: {}", key, throwable.toString());
      retryLater(RETRY_MS);
    }

    private void retryLater(long ms) {
      try {
        timer.schedule(this::query, ms, TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException e) {
        // closed
      }
    }
  }
}
