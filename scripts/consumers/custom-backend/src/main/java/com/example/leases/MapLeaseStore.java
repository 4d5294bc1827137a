package com.example.leases;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.TtlRange;
import dev.leases.spi.ReleaseListeners;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A third party's lease store, written against the public SPI only: one record per name in a
 * concurrent map, each call one atomic {@code compute} on that name's record. Expiry is judged on
 * {@link System#nanoTime()} (this process is "the store"); tokens come from one counter, so a name's
 * tokens only grow, also after {@link #deleteOutOfBand}. Other processes reach it through a server
 * (here the kit's loopback {@code LeaseStoreServer}), as they would reach any networked store.
 */
public final class MapLeaseStore implements LeaseStore {

  private static final TtlRange TTLS =
      new TtlRange(Duration.ofMillis(10), Duration.ofHours(1), Duration.ofMillis(1));

  private record Tenure(HolderId holder, long token, long expiresAtNanos) {
    boolean liveAt(long now) {
      return holder != null && expiresAtNanos - now > 0;
    }
  }

  private final ConcurrentMap<String, Tenure> tenures = new ConcurrentHashMap<>();
  private final AtomicLong tokens = new AtomicLong();
  private final ReleaseListeners listeners = new ReleaseListeners();
  private final AtomicBoolean closed = new AtomicBoolean();

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    check(name);
    Objects.requireNonNull(holder, "holder must not be null");
    TTLS.check(ttl);
    long[] now = new long[1];
    Tenure after = tenures.compute(name, (n, t) -> {
      now[0] = System.nanoTime();
      long expires = now[0] + ttl.toNanos();
      if (t != null && t.liveAt(now[0])) {
        return t.holder().equals(holder) ? new Tenure(holder, t.token(), expires) : t;
      }
      return new Tenure(holder, tokens.incrementAndGet(), expires);
    });
    if (!after.holder().equals(holder) || after.expiresAtNanos() != now[0] + ttl.toNanos()) {
      return Optional.empty(); // another holder's live tenure, unchanged
    }
    return Optional.of(new LeaseGrant(name, holder, after.token(), wall(after, now[0]), ttl));
  }

  @Override
  public boolean release(String name, HolderId holder) {
    check(name);
    Objects.requireNonNull(holder, "holder must not be null");
    boolean[] released = new boolean[1];
    tenures.computeIfPresent(name, (n, t) -> {
      long now = System.nanoTime();
      if (!t.liveAt(now) || !t.holder().equals(holder)) {
        return t;
      }
      released[0] = true;
      return new Tenure(null, t.token(), now);
    });
    if (released[0]) {
      listeners.fire(name);
    }
    return released[0];
  }

  @Override
  public OptionalLong token(String name) {
    check(name);
    Tenure t = tenures.get(name);
    if (t != null) {
      return OptionalLong.of(t.token());
    }
    long issued = tokens.get(); // no record: every token so far is <= the counter
    return issued == 0 ? OptionalLong.empty() : OptionalLong.of(issued);
  }

  @Override
  public LeaseState inspect(String name) {
    check(name);
    Tenure t = tenures.get(name);
    long now = System.nanoTime();
    if (t == null) {
      return new LeaseState.Free(name, tokens.get());
    }
    if (t.holder() == null) {
      return new LeaseState.Free(name, t.token());
    }
    if (!t.liveAt(now)) {
      return new LeaseState.Expired(name, t.holder(), t.token(), wall(t, now));
    }
    return new LeaseState.Held(name, t.holder(), t.token(), wall(t, now),
        Duration.ofNanos(t.expiresAtNanos() - now));
  }

  @Override
  public TtlRange ttlRange() {
    return TTLS;
  }

  @Override
  public Subscription onRelease(String name, Runnable listener) {
    check(name);
    return listeners.add(name, listener);
  }

  /** What an operator deleting the record by hand would do; the token counter is kept. */
  public void deleteOutOfBand(String name) {
    tenures.remove(LeaseArguments.requireName(name));
    listeners.fire(name);
  }

  @Override
  public void close() {
    closed.set(true);
  }

  private void check(String name) {
    LeaseArguments.requireName(name);
    if (closed.get()) {
      throw new LeaseStoreClosedException("this MapLeaseStore is closed");
    }
  }

  private static Instant wall(Tenure t, long nowNanos) {
    return Instant.now().plusNanos(t.expiresAtNanos() - nowNanos);
  }
}
