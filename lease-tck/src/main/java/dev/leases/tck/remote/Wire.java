package dev.leases.tck.remote;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import java.time.Duration;
import java.time.Instant;

/**
 * The line protocol between {@link LeaseStoreServer} and {@link RemoteLeaseStore}: one request line,
 * one reply line, fields separated by TAB. Names and holder ids cannot contain control characters
 * ({@link dev.leases.LeaseArguments}), so they need no escaping.
 */
final class Wire {
  static final String SEP = "\t";

  private Wire() {}

  static String grant(LeaseGrant g) {
    return String.join(SEP, "OK", Long.toString(g.token()),
        Long.toString(g.expiresAt().toEpochMilli()), Long.toString(g.ttl().toNanos()));
  }

  static LeaseGrant grant(String name, HolderId holder, String[] f) {
    return new LeaseGrant(name, holder, Long.parseLong(f[1]), Instant.ofEpochMilli(Long.parseLong(f[2])),
        Duration.ofNanos(Long.parseLong(f[3])));
  }

  static String state(LeaseState s) {
    if (s instanceof LeaseState.Held h) {
      return String.join(SEP, "OK", "HELD", h.holder().value(), Long.toString(h.lastToken()),
          Long.toString(h.expiresAt().toEpochMilli()), Long.toString(h.remaining().toNanos()));
    }
    if (s instanceof LeaseState.Expired e) {
      return String.join(SEP, "OK", "EXPIRED", e.holder().value(), Long.toString(e.lastToken()),
          Long.toString(e.expiredAt().toEpochMilli()));
    }
    return String.join(SEP, "OK", "FREE", Long.toString(s.lastToken()));
  }

  static LeaseState state(String name, String[] f) {
    switch (f[1]) {
      case "HELD":
        return new LeaseState.Held(name, new HolderId(f[2]), Long.parseLong(f[3]),
            Instant.ofEpochMilli(Long.parseLong(f[4])), Duration.ofNanos(Long.parseLong(f[5])));
      case "EXPIRED":
        return new LeaseState.Expired(name, new HolderId(f[2]), Long.parseLong(f[3]),
            Instant.ofEpochMilli(Long.parseLong(f[4])));
      default:
        return new LeaseState.Free(name, Long.parseLong(f[2]));
    }
  }
}
