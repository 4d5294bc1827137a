package dev.leases.redis;

import dev.leases.LeaseArguments;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

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
  static final int MAX_PREFIX_LENGTH = 64;

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

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
    Objects.requireNonNull(prefix, "keyPrefix must not be null");
    if (prefix.isEmpty() || prefix.length() > MAX_PREFIX_LENGTH) {
      throw new IllegalArgumentException("keyPrefix must be 1 to " + MAX_PREFIX_LENGTH
          + " characters long, was " + prefix.length() + "; use a short name such as \"leases\" or"
          + " \"myapp:leases\"");
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-' || c == ':' || c == '/';
      if (!ok) {
        throw new IllegalArgumentException("keyPrefix must use only A-Z a-z 0-9 . _ - : / (no braces,"
            + " glob characters, white space or control characters); found "
            + describe(c) + " at index " + i + " in \"" + printable(prefix) + "\"");
      }
    }
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
    byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(bytes.length + 8);
    for (byte b : bytes) {
      int c = b & 0xFF;
      boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
      if (plain) {
        sb.append((char) c);
      } else {
        sb.append('%').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
      }
    }
    return sb.toString();
  }

  private static String describe(char c) {
    return Character.isISOControl(c) || Character.isWhitespace(c)
        ? String.format("U+%04X", (int) c)
        : "'" + c + "'";
  }

  private static String printable(String s) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      sb.append(Character.isISOControl(c) ? String.format("\\u%04X", (int) c) : String.valueOf(c));
    }
    return sb.toString();
  }
}
