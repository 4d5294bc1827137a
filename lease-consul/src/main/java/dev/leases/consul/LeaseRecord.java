package dev.leases.consul;

import dev.leases.HolderId;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The value of a lease key: evidence of the latest tenure, written in the same transaction as the
 * lock, every renewal and the release. Plain text, one {@code field=value} per line, readable in the
 * Consul UI:
 *
 * <pre>
 * leases/1
 * state=held            (or released)
 * holder=host/4711/9f0c...
 * session=5b6d0a7e-...  (the Consul session of the tenure)
 * ttl-ms=10000         (the session TTL Consul granted, in ms)
 * stamp=1764412345678   (the holder's wall clock, ms, when it sent the acquire or renewal)
 * </pre>
 *
 * A holder id cannot contain a line break ({@link dev.leases.LeaseArguments}), so the format needs no
 * escaping. Anything that does not parse is treated as "not ours".
 */
record LeaseRecord(State state, HolderId holder, String session, Duration ttl, long stampMillis) {

  static final String MAGIC = "leases/1";

  enum State { HELD, RELEASED }

  LeaseRecord {
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(ttl, "ttl");
  }

  String encode() {
    return MAGIC + "\nstate=" + state.name().toLowerCase(java.util.Locale.ROOT)
        + "\nholder=" + holder.value()
        + "\nsession=" + session
        + "\nttl-ms=" + ttl.toMillis()
        + "\nstamp=" + stampMillis + "\n";
  }

  /** The record in {@code text}, or null when the key was written by something else. */
  static @Nullable LeaseRecord parse(@Nullable String text) {
    if (text == null || !text.startsWith(MAGIC + "\n")) {
      return null;
    }
    Map<String, String> fields = new HashMap<>();
    for (String line : text.substring(MAGIC.length() + 1).split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        fields.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
      }
    }
    try {
      State state = switch (fields.getOrDefault("state", "")) {
        case "held" -> State.HELD;
        case "released" -> State.RELEASED;
        default -> null;
      };
      String session = fields.get("session");
      long ttl = Long.parseLong(fields.getOrDefault("ttl-ms", "x"));
      long stamp = Long.parseLong(fields.getOrDefault("stamp", "x"));
      if (state == null || session == null || ttl <= 0) {
        return null;
      }
      return new LeaseRecord(state, new HolderId(fields.getOrDefault("holder", "")), session,
          Duration.ofMillis(ttl), stamp);
    } catch (RuntimeException e) {
      return null; // not a number, or not a valid holder id: not written by this library
    }
  }
}
