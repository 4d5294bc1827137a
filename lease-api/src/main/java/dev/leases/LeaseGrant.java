package dev.leases;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * A granted or renewed lease.
 *
 * @param name the lease
 * @param holder who holds it
 * @param token the fencing token: equal on renewal within one unexpired tenure, strictly larger on
 *     any other grant for this name; always {@code > 0}
 * @param expiresAt when the store will consider the lease expired, read from the <em>store's</em>
 *     clock; compare it only with other store times, never with this process's clock
 * @param ttl the TTL the store actually granted (it may round up or raise a request)
 */
public record LeaseGrant(String name, HolderId holder, long token, Instant expiresAt, Duration ttl) {

  /** Checks that every part is present and the TTL positive. */
  public LeaseGrant {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(expiresAt, "expiresAt");
    LeaseArguments.requirePositive("granted ttl", ttl);
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token must be positive, was " + token);
    }
  }
}
