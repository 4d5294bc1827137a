package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.spi.ReleaseListeners;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.async.ConsulResponseCallback;
import org.kiwiproject.consul.model.ConsulResponse;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.option.QueryOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release hints from Consul blocking queries ({@code index=N&wait=30s}, re-issued whenever one
 * returns), in one of two modes by how many lease names are watched:
 * <ul>
 *   <li>up to {@value #PER_KEY_MAX} names: one blocking query per lease key, which returns only when
 *       that key changes;
 *   <li>more: ONE recursive blocking query over the store's whole key prefix
 *       ({@code <prefix>/?recurse}), serving every watched name, plus — while names are being
 *       added — at most one plain read of the prefix at a time to learn their current state. The
 *       store keeps at most two requests open for its hints, however many names it watches (the
 *       agent refuses more than {@code http_max_conns_per_client}, 200 by default, from one
 *       address; one query per name also cost one HTTP thread each). It goes back to one query per
 *       name when {@value #PER_KEY_BACK} or fewer are left. The queries of the mode left behind
 *       that are already waiting at Consul stay open until their wait ends (at most
 *       {@value #PER_KEY_MAX} of them, at most {@value #WAIT_SECONDS} s; the client cannot cancel
 *       them), their answers ignored.
 * </ul>
 * A listener fires when its key is seen unlocked after it was seen locked (a release, a session
 * invalidated by its TTL, an out-of-band delete), or when an unlocked key changed between two
 * looks. Renewals leave the key locked: no hint. Each name's last-seen state is kept across mode
 * changes, so a release that happens while the store switches modes is still seen (the new
 * mode's first answer is compared with what the old one saw last).
 *
 * <p>What a busy prefix costs in the prefix mode: every write under the store's prefix (every key
 * of every holder, run records under {@code .once} included) ends the query, and the next answer is
 * the whole listing, which the watch parses in full: measured (ConsulReleaseWatchScaleTest), about
 * 380 bytes of JSON per key, some 5 bytes per key on the wire (the client asks for gzip; records
 * compress well). Acquires and releases are such writes, and so are single-call renewals
 * ({@code acquireOrRenew} rewrites the key's stamp: 50 of them on a 1,000-key prefix cost the watch
 * 4 to 9 listings); renewals by batch ({@code acquireOrRenewAll}, what {@code LeaseGroup} sends)
 * write nothing (5 rounds of 1,000 names: no listing). To bound that cost the watch asks at most
 * once per {@value #MIN_INTERVAL_MS} ms, or per 0.1 ms for each key the last listing held if that
 * is longer ({@link #paceMs}: 1 s on a 10,000-key prefix); a hint is then late by at most that. Stores whose prefix sees many single-call renewals and that watch many
 * names should have a prefix of their own.
 *
 * <p>Listeners are kept and run by {@link ReleaseListeners} (one that throws is logged and stays
 * subscribed); the last subscription of a name to close ends its watch. The queries and the
 * listeners run on the Consul client's HTTP threads (daemon threads for the clients the kiwiproject
 * builder makes); a query that fails is sent again after 1 s, doubling up to 16 s while it keeps
 * failing, from a single daemon timer. Hints are best-effort: a name's state is compared between
 * answers, so a release during an outage is seen by the first answer after it, unless the key was
 * locked again by then (a query in flight while the agent is unreachable fails only after its read
 * timeout, about 34 s); callers poll as well. {@link #close()} stops every query: later answers are
 * ignored, and the store's own client cancels those in flight.
 */
final class ReleaseWatches {

  private static final Logger log = LoggerFactory.getLogger(ReleaseWatches.class);

  static final int WAIT_SECONDS = 30;
  /** With more names watched than this, one query over the prefix serves them all. */
  static final int PER_KEY_MAX = 8;
  /** Back to one query per name at this many names or fewer. */
  static final int PER_KEY_BACK = 4;
  static final long MIN_INTERVAL_MS = 100;
  private static final long RETRY_MS = 1000;
  private static final long MAX_RETRY_MS = 16_000;
  /** A blocking query that returns sooner than this with an unchanged index is throttled. */
  private static final long QUICK_RETURN_MS = 1000;

  private final KeyValueClient kv;
  private final KeyLayout keys;
  private final String prefix;
  private final String keyPrefix;
  private volatile boolean deniedReported;
  private final ReleaseListeners listeners = new ReleaseListeners();
  private final ScheduledExecutorService timer;

  // guarded by this
  private final Map<String, Seen> watched = new HashMap<>(); // by key
  private final Map<String, Loop> perKey = new HashMap<>(); // by key, in the per-key mode
  private @Nullable Loop overPrefix; // in the prefix mode
  private boolean baselineWanted;
  private boolean baselineInFlight;
  private boolean closed;
  private final int waitSeconds;

  /** {@code waitSeconds}: each query's {@code wait=}, at most {@value #WAIT_SECONDS}. */
  ReleaseWatches(KeyValueClient kv, KeyLayout keys, int waitSeconds) {
    this.waitSeconds = waitSeconds;
    this.kv = kv;
    this.keys = keys;
    this.prefix = keys.prefix() + "/";
    this.keyPrefix = keys.prefix();
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, "leases-consul-watch-timer");
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    this.timer = t;
  }

  /** What was last seen of one watched key; guarded by the enclosing instance. */
  private static final class Seen {
    final String name;
    boolean known;
    boolean exists;
    boolean locked;
    long modifyIndex;
    /** The prefix index of the answer last applied (prefix mode: answers may overtake). */
    long seenAt;

    Seen(String name) {
      this.name = name;
    }

    /**
     * Takes {@code v} (null: absent) as the key's state; whether that is a release hint. The first
     * answer is a hint when it shows the key present and unlocked: released or invalidated, maybe
     * after the subscription and before this answer, which nothing else would report.
     */
    boolean observe(@Nullable Value v) {
      boolean nowExists = v != null;
      boolean nowLocked = v != null && v.getSession().filter(s -> !s.isEmpty()).isPresent();
      long nowModify = v == null ? 0 : v.getModifyIndex();
      boolean fire = !nowLocked && (known
          ? locked || (exists && !nowExists) || (nowExists && nowModify != modifyIndex)
          : nowExists);
      known = true;
      exists = nowExists;
      locked = nowLocked;
      modifyIndex = nowModify;
      return fire;
    }
  }

  LeaseStore.Subscription subscribe(String name, Runnable listener) {
    LeaseStore.Subscription registration;
    List<Runnable> start = new ArrayList<>();
    String key = keys.keyOf(name);
    synchronized (this) {
      if (closed) {
        return () -> {};
      }
      registration = listeners.add(name, listener);
      if (!watched.containsKey(key)) {
        watched.put(key, new Seen(name));
        if (overPrefix != null) {
          baselineWanted = true;
          start.add(this::readBaseline);
        } else if (watched.size() > PER_KEY_MAX) {
          start.add(enterPrefixMode());
        } else {
          Loop w = new Loop(key);
          perKey.put(key, w);
          start.add(w::query);
        }
      }
    }
    start.forEach(Runnable::run);
    return () -> {
      List<Runnable> restart = new ArrayList<>();
      synchronized (this) {
        registration.close();
        if (!closed && !listeners.has(name) && watched.remove(key) != null) {
          Loop w = perKey.remove(key);
          if (w != null) {
            w.stopped = true;
          }
          if (overPrefix != null && watched.size() <= PER_KEY_BACK) {
            restart.addAll(enterPerKeyMode());
          }
        }
      }
      restart.forEach(Runnable::run);
    };
  }

  /** Stops the per-key queries and starts the prefix one; run what it returns outside the lock. */
  private Runnable enterPrefixMode() {
    perKey.values().forEach(w -> w.stopped = true);
    perKey.clear();
    watched.values().forEach(s -> s.seenAt = 0);
    overPrefix = new Loop(null);
    return overPrefix::query;
  }

  private List<Runnable> enterPerKeyMode() {
    overPrefix.stopped = true;
    overPrefix = null;
    baselineWanted = false;
    List<Runnable> start = new ArrayList<>();
    for (String key : watched.keySet()) {
      Loop w = new Loop(key);
      perKey.put(key, w);
      start.add(w::query);
    }
    return start;
  }

  /** Number of lease names watched now (for tests). */
  synchronized int size() {
    return watched.size();
  }

  void close() {
    synchronized (this) {
      closed = true;
      perKey.values().forEach(w -> w.stopped = true);
      perKey.clear();
      if (overPrefix != null) {
        overPrefix.stopped = true;
        overPrefix = null;
      }
      watched.clear();
      listeners.clear();
    }
    timer.shutdownNow();
  }

  /**
   * In the prefix mode, reads the prefix once (no wait) so that names just subscribed learn their
   * state; one read at a time, again after it if more names came meanwhile.
   */
  private void readBaseline() {
    Loop owner;
    synchronized (this) {
      if (closed || overPrefix == null || !baselineWanted || baselineInFlight) {
        return;
      }
      owner = overPrefix;
      baselineWanted = false;
      baselineInFlight = true;
    }
    try {
      kv.getValues(prefix, QueryOptions.BLANK, new ConsulResponseCallback<>() {
        @Override
        public void onComplete(ConsulResponse<List<Value>> response) {
          List<Runnable> fire;
          synchronized (ReleaseWatches.this) {
            baselineInFlight = false;
            fire = owner.stopped ? List.of() : applyListing(response);
          }
          fire.forEach(Runnable::run);
          readBaseline();
        }

        @Override
        public void onFailure(Throwable failure) {
          warnIfDenied(failure);
          log.debug("release watch on {}: read failed, retrying: {}", prefix, failure.toString());
          synchronized (ReleaseWatches.this) {
            baselineInFlight = false;
            baselineWanted = true;
          }
          later(ReleaseWatches.this::readBaseline, RETRY_MS);
        }
      });
    } catch (RuntimeException e) {
      log.debug("release watch on {}: could not send the read: {}", prefix, e.toString());
      synchronized (this) {
        baselineInFlight = false;
        baselineWanted = true;
      }
      later(this::readBaseline, RETRY_MS);
    }
  }

  /** Compares every watched key with a listing of the prefix; the listeners to run. */
  private List<Runnable> applyListing(ConsulResponse<List<Value>> response) {
    long index = indexOf(response);
    Map<String, Value> found = new HashMap<>();
    if (response.getResponse() != null) {
      for (Value v : response.getResponse()) {
        found.put(v.getKey(), v);
      }
    }
    List<Runnable> fire = new ArrayList<>();
    for (Map.Entry<String, Seen> e : watched.entrySet()) {
      Seen s = e.getValue();
      if (s.known && index < s.seenAt) {
        continue; // an older listing than the one already applied (answers can overtake)
      }
      s.seenAt = index;
      if (s.observe(found.get(e.getKey()))) {
        String name = s.name;
        fire.add(() -> listeners.fire(name));
      }
    }
    return fire;
  }

  /**
   * The least time between two listings of the prefix: {@value #MIN_INTERVAL_MS} ms, or 0.1 ms per
   * key of the last listing when that is more (1 s for 10,000 keys), so that a prefix under heavy
   * writes (a batch acquiring 10,000 names writes it 313 times) costs the agent and this process a
   * bounded share of their time, whatever its size.
   */
  static long paceMs(int keysListed) {
    return Math.max(MIN_INTERVAL_MS, keysListed / 10);
  }

  private static int listed(ConsulResponse<?> response) {
    return response.getResponse() instanceof List<?> l ? l.size() : 0;
  }

  private static long indexOf(ConsulResponse<?> response) {
    BigInteger i = response.getIndex();
    return i == null || i.signum() < 0 || i.bitLength() > 63 ? 0 : i.longValue();
  }

  /**
   * Logs, once per store, that Consul refuses the watch's token: listeners would otherwise wait
   * for hints that never come while the watch retries quietly.
   */
  private void warnIfDenied(Throwable failure) {
    if (deniedReported || !(failure instanceof org.kiwiproject.consul.ConsulException ce)) {
      return;
    }
    ConsulAccessDeniedException denied = ConsulPolicies.denied("release watch on " + prefix
        + " (onRelease)", "Consul", keyPrefix, ce);
    if (denied != null) {
      deniedReported = true;
      log.warn("{}. Until the token may read the prefix, listeners get no release hints; the"
          + " watch keeps retrying", denied.getMessage());
    }
  }

  private void later(Runnable task, long ms) {
    try {
      timer.schedule(task, ms, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closed
    }
  }

  /** One blocking-query loop: of one key ({@code key} non-null), or of the whole prefix. */
  private final class Loop {
    final @Nullable String key;
    volatile boolean stopped;

    // touched by one callback at a time: each query is sent after the previous one completed
    private long index;
    private long sentAt;
    private long retryMs = RETRY_MS;

    Loop(@Nullable String key) {
      this.key = key;
    }

    void query() {
      if (stopped) {
        return;
      }
      try {
        sentAt = System.nanoTime();
        QueryOptions q = QueryOptions.blockSeconds(waitSeconds, BigInteger.valueOf(index)).build();
        if (key != null) {
          kv.getValue(key, q, callback());
        } else {
          kv.getValues(prefix, q, callback());
        }
      } catch (RuntimeException e) {
        log.debug("release watch on {}: could not send the query: {}", where(), e.toString());
        failed();
      }
    }

    private <T> ConsulResponseCallback<T> callback() {
      return new ConsulResponseCallback<>() {
        @Override
        public void onComplete(ConsulResponse<T> response) {
          answered(response);
        }

        @Override
        public void onFailure(Throwable failure) {
          if (!stopped) {
            warnIfDenied(failure);
            log.debug("release watch on {} failed, retrying in {} ms: {}", where(), retryMs,
                failure.toString());
            failed();
          }
        }
      };
    }

    private String where() {
      return key != null ? key : prefix + "?recurse";
    }

    @SuppressWarnings("unchecked") // the type the query asked for: see query()
    private void answered(ConsulResponse<?> response) {
      long previous = index;
      long next = indexOf(response);
      List<Runnable> fire;
      synchronized (ReleaseWatches.this) {
        if (stopped) {
          return;
        }
        if (next < previous) { // the index went backwards (a new cluster): start over
          next = 0;
          watched.values().forEach(s -> s.seenAt = 0);
        }
        if (key != null) {
          Seen s = watched.get(key);
          Optional<Value> body = (Optional<Value>) response.getResponse();
          Value v = body == null ? null : body.orElse(null);
          fire = s != null && s.observe(v) ? List.of(() -> listeners.fire(s.name)) : List.of();
        } else {
          fire = applyListing((ConsulResponse<List<Value>>) response);
        }
      }
      index = next;
      retryMs = RETRY_MS;
      fire.forEach(Runnable::run);
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentAt);
      long paceMs = key == null ? paceMs(listed(response)) : 0;
      if (next == previous && next > 0 && tookMs < QUICK_RETURN_MS) {
        later(this::query, QUICK_RETURN_MS); // an unchanged index returned at once: do not spin
      } else if (tookMs < paceMs) {
        later(this::query, paceMs - tookMs); // a busy prefix: pace the listings
      } else {
        query();
      }
    }

    private void failed() {
      long wait = retryMs;
      retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
      later(this::query, wait);
    }
  }
}
