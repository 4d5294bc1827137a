package dev.leases;

import java.util.Objects;
import java.util.Optional;

/**
 * What a store answered for one name of {@link LeaseStore#acquireOrRenewAll}: the name was
 * {@linkplain Granted granted} (or renewed), or {@linkplain Refused refused} because another holder
 * has an unexpired lease on it.
 */
public sealed interface AcquireResult permits AcquireResult.Granted, AcquireResult.Refused {

  /** The lease name this result is for. */
  String name();

  /** The grant, or empty when the name was refused. */
  Optional<LeaseGrant> grant();

  /** The name was granted or renewed for the caller. */
  record Granted(LeaseGrant lease) implements AcquireResult {
    /** Checks that the grant is present. */
    public Granted {
      Objects.requireNonNull(lease, "lease");
    }

    @Override
    public String name() {
      return lease.name();
    }

    @Override
    public Optional<LeaseGrant> grant() {
      return Optional.of(lease);
    }
  }

  /**
   * Another holder has an unexpired lease on the name.
   *
   * @param heldBy who holds it and when it expires, as the store read it in the same call (so a
   *     follower needs no second round trip to learn how long to sleep); empty when the store did
   *     not read it, as the SPI's default one-call-per-name implementation does not: call
   *     {@link LeaseStore#inspect} if you need it. By the time the caller reads it the holder may
   *     have released the lease or been superseded.
   */
  record Refused(String name, Optional<LeaseState.Held> heldBy) implements AcquireResult {
    /** Checks that {@code heldBy}, when present, is the state of {@code name}. */
    public Refused {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(heldBy, "heldBy");
      if (heldBy.isPresent() && !heldBy.get().name().equals(name)) {
        throw new IllegalArgumentException("a refusal of '" + name + "' carries the state of '"
            + heldBy.get().name() + "'");
      }
    }

    /** A refusal that does not say who holds the name. */
    public static Refused unexplained(String name) {
      return new Refused(name, Optional.empty());
    }

    @Override
    public Optional<LeaseGrant> grant() {
      return Optional.empty();
    }
  }
}
