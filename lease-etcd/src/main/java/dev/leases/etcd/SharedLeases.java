package dev.leases.etcd;

import dev.leases.HolderId;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The shared etcd leases of one {@link EtcdLeaseStore}: per (holder, TTL in seconds) one
 * <em>current</em> etcd lease that new tenures attach their keys to, and a hint per (holder, name)
 * of the shared lease this store last granted the name on. Hints only choose the cheaper path (a
 * renewal sends a keep-alive, then reads the key); every answer is proven by etcd, never by a hint.
 *
 * <p>Keep-alives of one shared lease are coalesced: a caller asks for a keep-alive <em>sent at or
 * after</em> its own start, and joins one in flight if that was sent late enough, else the next one,
 * sent as soon as the one in flight is answered. So concurrent renewals of many names of one holder
 * cost one keep-alive per round trip, and every grant's expiry is still measured from a keep-alive
 * sent after its call began.
 *
 * <p>A shared lease whose last name was released, and that is in use by no call, <em>lingers</em>
 * while it is the holder's current one for its TTL and {@linkplain Shared#fresh fresh}: no
 * keep-alive is sent for it, and the holder's next new tenure attaches to it, so that tenure costs
 * one transaction rather than a grant and then a transaction. It is retired (revoked) once a newer
 * current lease replaces it, once it is no longer fresh (found so by the next call to the registry,
 * at most {@link #SWEEP_EVERY_NANOS} apart), and at {@link #retireIdle} (the store's close). Any
 * other shared lease that carries nothing and is in use by no call is retired at once.
 * Thread-safe; one lock.
 */
final class SharedLeases {

  private final Lease leases;
  private final Duration callTimeout;
  private final LongConsumer revoke;
  private final Map<HolderId, Holder> holders = new HashMap<>();
  /** Current leases that carry nothing and are in use by no call, oldest first. */
  private final Set<Shared> idle = new LinkedHashSet<>();
  private long nextSweepNanos = System.nanoTime();

  /** How often, at most, lingering leases are checked for freshness (on the next call). */
  static final long SWEEP_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * @param revoke revokes an etcd lease in the background, best effort
   */
  SharedLeases(Lease leases, Duration callTimeout, LongConsumer revoke) {
    this.leases = leases;
    this.callTimeout = callTimeout;
    this.revoke = revoke;
  }

  /** One holder's shared leases (per TTL) and its hints (per name). Guarded by the registry. */
  private static final class Holder {
    final Map<Long, Shared> current = new HashMap<>();
    final Map<String, Shared> names = new HashMap<>();
  }

  /** One shared etcd lease. {@code users}, {@code hinted}, {@code dead}: guarded by the registry. */
  final class Shared {
    final HolderId holder;
    final long id;
    final long seconds;
    int users;
    int hinted;
    /** Whether its latest name left by a release (or is still on it): only such a lease lingers. */
    boolean carried;
    boolean dead;
    private volatile long aliveUntilNanos;
    private @Nullable KeepAlive inFlight; // guarded by this
    private @Nullable KeepAlive next; // guarded by this

    private Shared(HolderId holder, long id, long seconds, long sentNanos, long grantedTtl) {
      this.holder = holder;
      this.id = id;
      this.seconds = seconds;
      this.aliveUntilNanos = sentNanos + TimeUnit.SECONDS.toNanos(grantedTtl);
    }

    /**
     * A keep-alive of this etcd lease sent no earlier than {@code sinceNanos} ({@link System#nanoTime}):
     * the one in flight if it was, else the next. Each caller gets its own copy (cancelling it
     * cancels nothing shared); the keep-alive itself is bounded by the call timeout.
     */
    CompletableFuture<LeaseKeepAliveResponse> keepAliveSentAfter(long sinceNanos) {
      synchronized (this) {
        if (inFlight != null && inFlight.sentNanos - sinceNanos >= 0) {
          return inFlight.result.copy();
        }
        if (inFlight == null) {
          return start(new KeepAlive()).result.copy();
        }
        if (next == null) {
          next = new KeepAlive();
        }
        return next.result.copy();
      }
    }

    private KeepAlive start(KeepAlive k) {
      k.sentNanos = System.nanoTime();
      inFlight = k;
      CompletableFuture<LeaseKeepAliveResponse> raw;
      try {
        raw = leases.keepAliveOnce(id).orTimeout(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (RuntimeException e) {
        raw = CompletableFuture.failedFuture(e);
      }
      raw.whenComplete((r, e) -> {
        if (e == null && r.getTTL() > 0) {
          aliveUntilNanos = Math.max(aliveUntilNanos,
              k.sentNanos + TimeUnit.SECONDS.toNanos(r.getTTL()));
        }
        synchronized (this) {
          if (inFlight == k) {
            inFlight = null;
            KeepAlive n = next;
            next = null;
            if (n != null) {
              start(n);
            }
          }
        }
        if (e != null) {
          k.result.completeExceptionally(e);
        } else {
          k.result.complete(r);
        }
      });
      return k;
    }

    /**
     * Whether new names may attach to this lease: by its last keep-alive that etcd answered, at
     * least half its TTL is left. (Their expiry is measured from a keep-alive sent in their own call
     * regardless; this only avoids attaching to a lease that may be gone by the time it arrives.)
     */
    boolean fresh() {
      return aliveUntilNanos - System.nanoTime() >= TimeUnit.SECONDS.toNanos(seconds) / 2;
    }
  }

  private static final class KeepAlive {
    long sentNanos;
    final CompletableFuture<LeaseKeepAliveResponse> result = new CompletableFuture<>();
  }

  /**
   * The holder's current shared lease for {@code seconds} if it may take new names, else null; in
   * use by the call that collects {@code used} until {@link #done}.
   */
  synchronized @Nullable Shared useCurrent(HolderId holder, long seconds, Set<Shared> used) {
    sweep();
    Holder h = holders.get(holder);
    Shared s = h == null ? null : h.current.get(seconds);
    if (s == null || s.dead || !s.fresh()) {
      return null;
    }
    use(s, used);
    return s;
  }

  /** Retires lingering leases that are no longer fresh, at most every {@link #SWEEP_EVERY_NANOS}. */
  private void sweep() {
    long now = System.nanoTime();
    if (now - nextSweepNanos < 0) {
      return;
    }
    nextSweepNanos = now + SWEEP_EVERY_NANOS;
    for (Shared s : List.copyOf(idle)) {
      if (!s.fresh()) {
        retire(s);
      }
    }
  }

  /**
   * Retires (revokes) every lingering lease, for the store's close; leases that carry names or are
   * in use stay (they expire by their TTL unless renewed).
   */
  synchronized void retireIdle() {
    for (Shared s : List.copyOf(idle)) {
      retire(s);
    }
  }

  /**
   * Installs a lease just granted as the holder's current one for {@code seconds}, in use. If another
   * call installed a fresh one meanwhile, that one is used and {@code id} revoked.
   */
  synchronized Shared install(HolderId holder, long seconds, long id, long sentNanos, long ttl,
      Set<Shared> used) {
    sweep();
    Holder h = holders.computeIfAbsent(holder, k -> new Holder());
    Shared s = h.current.get(seconds);
    if (s != null && !s.dead && s.fresh()) {
      revoke.accept(id);
      use(s, used);
      return s;
    }
    Shared fresh = new Shared(holder, id, seconds, sentNanos, ttl);
    use(fresh, used);
    h.current.put(seconds, fresh);
    if (s != null) {
      retireIfUnused(s);
    }
    return fresh;
  }

  /** The shared leases this store last granted {@code names} on for {@code holder}, now in use. */
  synchronized Map<String, Shared> useHinted(HolderId holder, List<String> names,
      Set<Shared> used) {
    Holder h = holders.get(holder);
    Map<String, Shared> out = new HashMap<>();
    if (h == null) {
      return out;
    }
    for (String n : names) {
      Shared s = h.names.get(n);
      if (s != null && !s.dead) {
        out.put(n, s);
        use(s, used);
      }
    }
    return out;
  }

  private void use(Shared s, Set<Shared> used) {
    if (used.add(s)) {
      s.users++;
      idle.remove(s);
    }
  }

  /** Ends a call's use of {@code used}; retires those that carry nothing any more. */
  synchronized void done(Set<Shared> used) {
    for (Shared s : used) {
      s.users--;
      retireIfUnused(s);
    }
  }

  /** Records the shared lease each name was granted on (or found on). */
  synchronized void hintAll(Map<String, Shared> granted) {
    granted.forEach(this::hint);
  }

  private void hint(String name, Shared s) {
    if (s.dead) {
      return;
    }
    Holder h = holders.computeIfAbsent(s.holder, k -> new Holder());
    Shared old = h.names.put(name, s);
    if (old != s) {
      s.hinted++;
      s.carried = true;
      idle.remove(s);
      if (old != null) {
        old.hinted--;
        retireIfUnused(old);
      }
    }
  }

  /**
   * Forgets the hints of {@code names} ({@code released}, else refused or lost); retires leases left
   * carrying nothing, except that one whose last name was released may linger.
   */
  synchronized void unhint(HolderId holder, Iterable<String> names, boolean released) {
    Holder h = holders.get(holder);
    if (h == null) {
      return;
    }
    for (String n : names) {
      Shared old = h.names.remove(n);
      if (old != null) {
        old.hinted--;
        old.carried = released;
        retireIfUnused(old);
      }
    }
    forgetIfEmpty(holder, h);
  }

  /**
   * {@code s} is gone in etcd (a keep-alive or an attach said it does not exist): every name on it is
   * lost with it, so its hints go too.
   */
  synchronized void lost(Shared s) {
    if (s.dead) {
      return;
    }
    s.dead = true;
    idle.remove(s);
    Holder h = holders.get(s.holder);
    if (h == null) {
      return;
    }
    h.current.remove(s.seconds, s);
    List<String> gone = new ArrayList<>();
    h.names.forEach((n, x) -> {
      if (x == s) {
        gone.add(n);
      }
    });
    gone.forEach(h.names::remove);
    s.hinted = 0;
    forgetIfEmpty(s.holder, h);
  }

  /**
   * Retires {@code s} if it carries nothing and is in use by no call, unless it is the holder's
   * current lease for its TTL, still fresh, and its last name was released: then it lingers. (A
   * lease granted for a race that every name lost, or whose last name was lost or refused, is
   * retired: such a holder usually tries again only after the winner's TTL, when a lingering lease
   * would no longer be fresh.)
   */
  private void retireIfUnused(Shared s) {
    if (s.dead || s.users > 0 || s.hinted > 0) {
      return;
    }
    Holder h = holders.get(s.holder);
    if (s.carried && h != null && h.current.get(s.seconds) == s && s.fresh()) {
      idle.add(s);
      return;
    }
    retire(s);
  }

  private void retire(Shared s) {
    s.dead = true;
    idle.remove(s);
    Holder h = holders.get(s.holder);
    if (h != null) {
      h.current.remove(s.seconds, s);
      forgetIfEmpty(s.holder, h);
    }
    revoke.accept(s.id);
  }

  private void forgetIfEmpty(HolderId holder, Holder h) {
    if (h.current.isEmpty() && h.names.isEmpty()) {
      holders.remove(holder, h);
    }
  }
}
