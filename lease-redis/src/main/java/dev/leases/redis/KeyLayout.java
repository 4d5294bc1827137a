package dev.leases.redis;

import dev.leases.LeaseArguments;
import dev.leases.spi.KeyText;

/**
 * Where a lease lives in Redis. For prefix {@code p} and lease name {@code n} every key of the lease
 * shares the hash tag {@code {p:E(n)}}, so Redis Cluster keeps them in one slot and one script may
 * touch them all:
 *
 * <ul>
 *   <li>{@code {p:E(n)}:lease} — hash {@code holder}, {@code token}; expires natively (PEXPIREAT).
 *   <li>{@code {p:E(n)}:fence} — string counter: the highest token issued; never expires and this
 *       library never deletes it.
 *   <li>{@code {p:E(n)}:last} — hash {@code holder}, {@code token}, {@code exp} (server ms): evidence
 *       of the latest tenure, so that an expired-but-not-taken lease is not mistaken for a free one.
 * </ul>
 *
 * <p>{@code E} percent-encodes the UTF-8 bytes of the name except {@code A-Z a-z 0-9 - . _ ~ /}.
 * The encoding is injective and its output never contains {@code { } : % * ? [ ] \} or white space,
 * so a hostile name cannot end the hash tag early, collide with another name or prefix, or act as
 * a glob in {@code SCAN MATCH}. Names like {@code billing-nightly} stay readable.
 */
final class KeyLayout {

  /** Longest accepted key prefix. */
  static final int MAX_PREFIX_LENGTH = KeyText.MAX_PREFIX_LENGTH;

  private final String prefix;

  KeyLayout(String prefix) {
    this.prefix = requirePrefix(prefix);
  }

  String prefix() {
    return prefix;
  }

  /**
   * Checks a key prefix: 1 to {@value #MAX_PREFIX_LENGTH} characters from {@code A-Z a-z 0-9 . _ - :
   * /}. Braces would break the hash tag, glob characters would make {@code SCAN} patterns lie, and
   * white space or control characters make keys unreadable in {@code redis-cli}.
   */
  static String requirePrefix(String prefix) {
    KeyText.requirePrefix(prefix, "._-:/", "myapp:leases");
    if (prefix.endsWith(":")) {
      throw new IllegalArgumentException("keyPrefix must not end with ':' (the separator is added),"
          + " was \"" + prefix + "\"");
    }
    return prefix;
  }

  /** The hash tag shared by every key of {@code name}, braces included. */
  String tag(String name) {
    return "{" + prefix + ":" + encode(LeaseArguments.requireName(name)) + "}";
  }

  String leaseKey(String name) {
    return tag(name) + ":lease";
  }

  String fenceKey(String name) {
    return tag(name) + ":fence";
  }

  String lastKey(String name) {
    return tag(name) + ":last";
  }

  /** The pub/sub channel on which releases are announced; the message is the raw lease name. */
  String releaseChannel() {
    return prefix + ":released";
  }

  /** Percent-encodes the UTF-8 bytes of {@code name} outside {@code A-Z a-z 0-9 - . _ ~ /}. */
  static String encode(String name) {
    return KeyText.percentEncode(name, "/");
  }

}
