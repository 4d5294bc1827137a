package dev.leases.memory;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseListing;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.TtlRange;
import dev.leases.spi.ReleaseListeners;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The reference store: leases in this JVM's memory, expiring by an injectable {@link LeaseClock}.
 * Use it in unit tests of code that takes a {@link LeaseStore}, with a
 * {@link dev.leases.time.ManualClock} to expire leases without sleeping. It passes the same
 * compatibility kit as the real backends.
 *
 * <p>Expiry is judged on the clock's monotonic time; {@link LeaseGrant#expiresAt()} reports it in
 * the clock's wall time. Tokens come from one counter for the whole store, so they never go
 * backwards for a name, even after {@link #deleteOutOfBand(String)}; for a name it has no record of,
 * {@link #token(String)} and {@link #inspect(String)} answer that counter (the bound the
 * {@link LeaseStore#token(String)} contract allows), empty before the first grant.
 *
 * <p>{@link #newClient()} returns another handle on the same leases, as a second process's client
 * would be; closing one handle does not affect the others.
 */
public final class InMemoryLeaseStore implements LeaseStore, LeaseListing {

  /** Accepts TTLs from 1 ms to 1 day, to the millisecond. */
  public static final TtlRange TTL_RANGE =
      new TtlRange(Duration.ofMillis(1), Duration.ofDays(1), Duration.ofMillis(1));

  private final Shared shared;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** A store on the system clock. */
  public InMemoryLeaseStore() {
    this(LeaseClock.system());
  }

  /** A store whose expiry is judged by {@code clock}. */
  public InMemoryLeaseStore(LeaseClock clock) {
    this(new Shared(clock));
  }

  private InMemoryLeaseStore(Shared shared) {
    this.shared = shared;
  }

  /** Another handle on the same leases. */
  public InMemoryLeaseStore newClient() {
    return new InMemoryLeaseStore(shared);
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    java.util.Objects.requireNonNull(holder, "holder must not be null");
    TTL_RANGE.check(ttl);
    ensureOpen();
    synchronized (shared) {
      long now = shared.clock.monotonicNanos();
      Entry e = shared.entries.get(name);
      long token;
      if (e == null || e.holder == null || e.expiresAtNanos <= now) {
        token = ++shared.counter;
      } else if (e.holder.equals(holder)) {
        token = e.token;
      } else {
        return Optional.empty();
      }
      long expires = now + ttl.toNanos();
      shared.entries.put(name, new Entry(holder, token, expires));
      return Optional.of(new LeaseGrant(name, holder, token, wallOf(expires, now), ttl));
    }
  }

  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    java.util.Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    synchronized (shared) {
      long now = shared.clock.monotonicNanos();
      Entry e = shared.entries.get(name);
      if (e == null || !holder.equals(e.holder) || e.expiresAtNanos <= now) {
        return false;
      }
      shared.entries.put(name, new Entry(null, e.token, now));
    }
    shared.listeners.fire(name);
    return true;
  }

  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    synchronized (shared) {
      Entry e = shared.entries.get(name);
      if (e != null) {
        return OptionalLong.of(e.token);
      }
      return shared.counter == 0 ? OptionalLong.empty() : OptionalLong.of(shared.counter);
    }
  }

  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    synchronized (shared) {
      long now = shared.clock.monotonicNanos();
      Entry e = shared.entries.get(name);
      if (e == null) {
        return new LeaseState.Free(name, shared.counter);
      }
      if (e.holder == null) {
        return new LeaseState.Free(name, e.token);
      }
      if (e.expiresAtNanos <= now) {
        return new LeaseState.Expired(name, e.holder, e.token, wallOf(e.expiresAtNanos, now));
      }
      return new LeaseState.Held(
          name, e.holder, e.token, wallOf(e.expiresAtNanos, now),
          Duration.ofNanos(e.expiresAtNanos - now));
    }
  }

  /** Every name with a record (held, expired or released; not those deleted out of band). */
  @Override
  public List<String> names(String prefix, int limit) {
    LeaseListing.requireListing(prefix, limit);
    ensureOpen();
    synchronized (shared) {
      return shared.entries.keySet().stream().filter(n -> n.startsWith(prefix))
          .sorted(CODE_POINT_ORDER).limit(limit).toList();
    }
  }

  /** Simulates an operator deleting the stored lease by hand; the token counter is kept. */
  public void deleteOutOfBand(String name) {
    LeaseArguments.requireName(name);
    synchronized (shared) {
      shared.entries.remove(name);
    }
    shared.listeners.fire(name);
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return shared.listeners.add(name, listener);
  }

  @Override
  public void close() {
    closed.set(true);
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this InMemoryLeaseStore handle is closed");
    }
  }

  private Instant wallOf(long monoNanos, long nowMono) {
    long wallNow = shared.clock.wallMillis();
    return Instant.ofEpochMilli(wallNow).plusNanos(monoNanos - nowMono);
  }

  private record Entry(HolderId holder, long token, long expiresAtNanos) {}

  private static final class Shared {
    final LeaseClock clock;
    final Map<String, Entry> entries = new HashMap<>();
    final ReleaseListeners listeners = new ReleaseListeners();
    long counter;

    Shared(LeaseClock clock) {
      this.clock = java.util.Objects.requireNonNull(clock, "clock must not be null");
    }
  }
}
