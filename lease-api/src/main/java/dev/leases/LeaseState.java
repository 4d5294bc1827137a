package dev.leases;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What the store says about a lease right now; never answered from a cache. "Held by a holder that
 * has stopped renewing" ({@link Expired}) is not "free" ({@link Free}): a caller that must not act on
 * a dead holder's behalf can tell them apart.
 */
public sealed interface LeaseState permits LeaseState.Free, LeaseState.Held, LeaseState.Expired {

  /** The three states as an enum, for switches. */
  enum Status {
    /** No holder: never granted, released, or its record deleted. */
    FREE,
    /** Held by a holder until its expiry. */
    HELD,
    /** Its holder stopped renewing and the TTL passed without a release. */
    EXPIRED
  }

  /** The lease name this state is for. */
  String name();

  /** Which of the three states this is. */
  Status status();

  /**
   * The same bound as {@link LeaseStore#token(String)}: no token issued for this name is larger, and
   * every later grant of a new tenure is larger; exactly the latest grant's token while the store
   * keeps its record of the name; 0 if none is known.
   */
  long lastToken();

  /** Nobody holds the lease: never granted, or released. */
  record Free(String name, long lastToken) implements LeaseState {
    /** Checks the parts. */
    public Free {
      Objects.requireNonNull(name, "name");
    }

    @Override
    public Status status() {
      return Status.FREE;
    }
  }

  /**
   * Held and unexpired by the store's clock.
   *
   * @param remaining how long until the store considers it expired, measured by the store
   */
  record Held(String name, HolderId holder, long lastToken, Instant expiresAt, Duration remaining)
      implements LeaseState {
    /** Checks the parts. */
    public Held {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(holder, "holder");
      Objects.requireNonNull(expiresAt, "expiresAt");
      Objects.requireNonNull(remaining, "remaining");
    }

    @Override
    public Status status() {
      return Status.HELD;
    }
  }

  /** Its holder stopped renewing and the store's clock passed the expiry; nobody has taken it yet. */
  record Expired(String name, HolderId holder, long lastToken, Instant expiredAt)
      implements LeaseState {
    /** Checks the parts. */
    public Expired {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(holder, "holder");
      Objects.requireNonNull(expiredAt, "expiredAt");
    }

    @Override
    public Status status() {
      return Status.EXPIRED;
    }
  }
}
