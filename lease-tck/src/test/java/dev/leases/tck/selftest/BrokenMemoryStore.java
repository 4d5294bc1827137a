package dev.leases.tck.selftest;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.TtlRange;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ReleaseListeners;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;

/**
 * A copy of the reference {@link InMemoryLeaseStore} with switchable defects, for bugs that live
 * inside a store's decisions (which token to issue, when a lease expires, what a name means) and
 * cannot be layered on from outside. With no {@link Bug} and the identity key it behaves like the
 * reference store. Every handle from {@link #newClient()} shares the leases.
 */
final class BrokenMemoryStore implements LeaseStore, BrokenStore.Backing {

  /** One defect each; a store may have several. */
  enum Bug {
    /** A new tenure after an expiry reuses the expired tenure's token. */
    TOKEN_REUSED_AFTER_EXPIRY,
    /** The holder's own re-acquire after its expiry keeps the token (someone may have held it). */
    OWN_REACQUIRE_AFTER_EXPIRY_KEEPS_TOKEN,
    /** Tokens count per name from the stored record (1, 2, ...): a missing record starts again. */
    PER_NAME_TOKENS,
    /** Release deletes the record ({@code DELETE} in SQL); with per-name tokens they restart. */
    RELEASE_DELETES_RECORD,
    /** Per-name tokens start at 0 instead of 1: a fresh name's first grant is not positive. */
    TOKENS_START_AT_ZERO,
    /** A holder that was superseded still "renews" with its old token (etcd keep-alive bug). */
    SUPERSEDED_RENEWAL_SUCCEEDS,
    /** A contender is granted an unexpired lease held by another. */
    CONTENDER_STEALS,
    /** Acquire never looks at the expiry: a lease is held until released. */
    EXPIRY_NOT_ENFORCED,
    /** Frees the lease at 80% of the TTL while grant and inspect report the full TTL. */
    EXPIRES_AT_80_PERCENT,
    /** The grant reports 125% of the TTL it enforces. */
    GRANT_REPORTS_LONGER_TTL,
    /** Ignores the requested TTL and grants a fixed 30 s (reported honestly in the grant). */
    FIXED_30S_TTL,
    /** An expired lease is reported as FREE. */
    EXPIRED_REPORTED_AS_FREE,
    /** Release does not check the holder. */
    RELEASE_IGNORES_HOLDER,
    /** Release does not check expiry: the holder's late release answers true. */
    RELEASE_IGNORES_EXPIRY,
    /** Acquire reads, then writes in a second step (check-then-act across a round trip). */
    NON_ATOMIC_ACQUIRE,
    /** Release hints are never delivered (while the kit is told they are). */
    NO_HINTS,
    /** An out-of-band delete sends no hint (only releases do). */
    NO_HINT_ON_DELETE,
    /** For a name without a record, token() is empty and inspect answers 0, even after a delete. */
    NO_BOUND_WITHOUT_RECORD,
    /** A released lease is reported FREE with last token 0. */
    FREE_FORGETS_TOKEN,
    /** Expiry is judged by the calling client's wall clock ({@link #newClient(LeaseClock)}). */
    CALLERS_CLOCK,
    /** Validates the encoded key instead of the name the caller passed. */
    VALIDATES_KEY_NOT_NAME,
    /** Does not validate names at all (only null is refused). */
    NO_NAME_VALIDATION,
    /** A restart loses the token counter, so tokens start again at 1 (Redis without the clamp). */
    RESTART_LOSES_COUNTER
  }

  private final Shared shared;
  private final LeaseClock clientClock;
  private final AtomicBoolean closed = new AtomicBoolean();

  BrokenMemoryStore(Set<Bug> bugs) {
    this(bugs, UnaryOperator.identity());
  }

  /** A store whose entries are keyed by {@code key.apply(name)} (a lossy key merges names). */
  BrokenMemoryStore(Set<Bug> bugs, UnaryOperator<String> key) {
    this(new Shared(bugs.isEmpty() ? EnumSet.noneOf(Bug.class) : EnumSet.copyOf(bugs), key),
        LeaseClock.system());
  }

  private BrokenMemoryStore(Shared shared, LeaseClock clientClock) {
    this.shared = shared;
    this.clientClock = clientClock;
  }

  private boolean has(Bug bug) {
    return shared.bugs.contains(bug);
  }

  @Override
  public LeaseStore newClient() {
    return newClient(LeaseClock.system());
  }

  /** A handle whose process clock is {@code clock}; only a {@link Bug#CALLERS_CLOCK} store reads it. */
  @Override
  public LeaseStore newClient(LeaseClock clock) {
    return new BrokenMemoryStore(shared, clock);
  }

  private String key(String name) {
    Objects.requireNonNull(name, "lease name must not be null");
    if (has(Bug.NO_NAME_VALIDATION)) {
      return shared.key.apply(name);
    }
    if (has(Bug.VALIDATES_KEY_NOT_NAME)) {
      return LeaseArguments.requireName(shared.key.apply(name));
    }
    return shared.key.apply(LeaseArguments.requireName(name));
  }

  /** Now, in nanoseconds, on the clock that judges expiry. */
  private long now() {
    return has(Bug.CALLERS_CLOCK) ? clientClock.wallMillis() * 1_000_000L
        : shared.clock.monotonicNanos();
  }

  private long wallMillis() {
    return has(Bug.CALLERS_CLOCK) ? clientClock.wallMillis() : shared.clock.wallMillis();
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    String key = key(name);
    Objects.requireNonNull(holder, "holder must not be null");
    InMemoryLeaseStore.TTL_RANGE.check(ttl);
    ensureOpen();
    if (has(Bug.NON_ATOMIC_ACQUIRE)) {
      Entry seen;
      synchronized (shared) {
        seen = shared.entries.get(key);
      }
      // the round trip between the read and the write of a store that does check-then-act
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      synchronized (shared) {
        return decide(name, key, holder, ttl, seen);
      }
    }
    synchronized (shared) {
      return decide(name, key, holder, ttl, shared.entries.get(key));
    }
  }

  private Optional<LeaseGrant> decide(String name, String key, HolderId holder, Duration ttl,
      Entry e) {
    long now = now();
    boolean live = e != null && e.holder != null
        && (has(Bug.EXPIRY_NOT_ENFORCED) || e.enforcedNanos > now);
    long token;
    if (live && e.holder.equals(holder)) {
      token = e.token;
    } else if (live && !has(Bug.CONTENDER_STEALS)) {
      Long old = shared.pastTenures.get(key + "\n" + holder.value());
      if (has(Bug.SUPERSEDED_RENEWAL_SUCCEEDS) && old != null) {
        return Optional.of(new LeaseGrant(name, holder, old, wallOf(now + ttl.toNanos(), now), ttl));
      }
      return Optional.empty();
    } else if (e != null && e.holder != null && (has(Bug.TOKEN_REUSED_AFTER_EXPIRY)
        || has(Bug.OWN_REACQUIRE_AFTER_EXPIRY_KEEPS_TOKEN) && e.holder.equals(holder))) {
      token = e.token;
    } else if (has(Bug.PER_NAME_TOKENS)) {
      token = e == null ? (has(Bug.TOKENS_START_AT_ZERO) ? 0 : 1) : e.token + 1;
    } else {
      token = ++shared.counter;
    }
    long enforcedTtl = has(Bug.FIXED_30S_TTL) ? Duration.ofSeconds(30).toNanos()
        : has(Bug.EXPIRES_AT_80_PERCENT) ? ttl.toNanos() * 4 / 5 : ttl.toNanos();
    long reportedTtl = has(Bug.FIXED_30S_TTL) ? enforcedTtl : ttl.toNanos();
    long reported = now + reportedTtl;
    shared.entries.put(key, new Entry(holder, token, now + enforcedTtl, reported));
    shared.pastTenures.put(key + "\n" + holder.value(), token);
    Duration grantTtl = Duration.ofNanos(has(Bug.GRANT_REPORTS_LONGER_TTL)
        ? reportedTtl * 5 / 4 : reportedTtl);
    return Optional.of(new LeaseGrant(name, holder, token, wallOf(reported, now), grantTtl));
  }

  @Override
  public boolean release(String name, HolderId holder) {
    String key = key(name);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    synchronized (shared) {
      long now = now();
      Entry e = shared.entries.get(key);
      if (e == null || e.holder == null
          || !has(Bug.RELEASE_IGNORES_HOLDER) && !holder.equals(e.holder)
          || !has(Bug.RELEASE_IGNORES_EXPIRY) && e.enforcedNanos <= now) {
        return false;
      }
      if (has(Bug.RELEASE_DELETES_RECORD)) {
        shared.entries.remove(key);
      } else {
        shared.entries.put(key, new Entry(null, e.token, now, now));
      }
    }
    fire(key);
    return true;
  }

  private void fire(String key) {
    if (!has(Bug.NO_HINTS)) {
      shared.listeners.fire(key);
    }
  }

  @Override
  public OptionalLong token(String name) {
    String key = key(name);
    ensureOpen();
    synchronized (shared) {
      Entry e = shared.entries.get(key);
      if (e != null) {
        return OptionalLong.of(e.token);
      }
      return shared.counter == 0 || has(Bug.NO_BOUND_WITHOUT_RECORD) || has(Bug.PER_NAME_TOKENS)
          ? OptionalLong.empty() : OptionalLong.of(shared.counter);
    }
  }

  @Override
  public LeaseState inspect(String name) {
    String key = key(name);
    ensureOpen();
    synchronized (shared) {
      long now = now();
      Entry e = shared.entries.get(key);
      if (e == null) {
        boolean noBound = has(Bug.NO_BOUND_WITHOUT_RECORD) || has(Bug.PER_NAME_TOKENS);
        return new LeaseState.Free(name, noBound ? 0 : shared.counter);
      }
      if (e.holder == null) {
        return new LeaseState.Free(name, has(Bug.FREE_FORGETS_TOKEN) ? 0 : e.token);
      }
      if (e.enforcedNanos <= now) {
        return has(Bug.EXPIRED_REPORTED_AS_FREE) ? new LeaseState.Free(name, e.token)
            : new LeaseState.Expired(name, e.holder, e.token, wallOf(e.reportedNanos, now));
      }
      return new LeaseState.Held(name, e.holder, e.token, wallOf(e.reportedNanos, now),
          Duration.ofNanos(Math.max(1, e.reportedNanos - now)));
    }
  }

  @Override
  public void deleteOutOfBand(String name) {
    String key = key(name);
    synchronized (shared) {
      shared.entries.remove(key);
    }
    if (!has(Bug.NO_HINT_ON_DELETE)) {
      fire(key);
    }
  }

  /**
   * Simulates a restart of a store that keeps no leases: they are lost, the token counter is kept
   * (as a persisted sequence or a clamp to the server's clock would), unless
   * {@link Bug#RESTART_LOSES_COUNTER}.
   */
  @Override
  public void restart() {
    synchronized (shared) {
      shared.entries.clear();
      shared.pastTenures.clear();
      if (has(Bug.RESTART_LOSES_COUNTER)) {
        shared.counter = 0;
      }
    }
  }

  @Override
  public TtlRange ttlRange() {
    return InMemoryLeaseStore.TTL_RANGE;
  }

  @Override
  public Subscription onRelease(String name, Runnable listener) {
    String key = key(name);
    ensureOpen();
    return shared.listeners.add(key, listener);
  }

  @Override
  public void close() {
    closed.set(true);
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this BrokenMemoryStore handle is closed");
    }
  }

  private Instant wallOf(long nanos, long now) {
    return Instant.ofEpochMilli(wallMillis()).plusNanos(nanos - now);
  }

  /** {@code enforcedNanos}: when the store frees it; {@code reportedNanos}: what it tells callers. */
  private record Entry(HolderId holder, long token, long enforcedNanos, long reportedNanos) {}

  private static final class Shared {
    final Set<Bug> bugs;
    final UnaryOperator<String> key;
    final LeaseClock clock = LeaseClock.system();
    final Map<String, Entry> entries = new HashMap<>();
    final Map<String, Long> pastTenures = new HashMap<>();
    final ReleaseListeners listeners = new ReleaseListeners();
    long counter;

    Shared(Set<Bug> bugs, UnaryOperator<String> key) {
      this.bugs = bugs;
      this.key = key;
    }
  }
}
