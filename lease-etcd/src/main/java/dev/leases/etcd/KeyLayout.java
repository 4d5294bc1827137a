package dev.leases.etcd;

import dev.leases.LeaseArguments;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Where things live in etcd. For key prefix {@code p} and lease name {@code n}:
 *
 * <ul>
 *   <li>{@code p/lease/E(n)} — the lease key: value = the holder id (UTF-8), attached to the holder's
 *       etcd lease, so it disappears when the lease expires or is revoked. Its
 *       {@code create_revision} is the fencing token.
 *   <li>{@code p/last/E(n)} — the companion key, never attached to a lease and never deleted by this
 *       library: {@code held|holder} written in the acquiring transaction (its {@code mod_revision}
 *       then equals the token), or {@code released|token|holder} written by the releasing one. It is
 *       the evidence that tells an expired lease from a released one, and remembers the last token.
 *   <li>{@code p/fence/E(r)} — the fence of a resource {@code r} guarded by {@link EtcdFence}.
 * </ul>
 *
 * <p>{@code E} percent-encodes the UTF-8 bytes of the name except {@code A-Z a-z 0-9 - . _ ~}. The
 * encoding is injective and never produces {@code /}, so a name cannot reach into another prefix's
 * keys (prefix {@code p} with name {@code lease/x} vs. prefix {@code p/lease} with name {@code x}).
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
   * Checks a key prefix: 1 to {@value #MAX_PREFIX_LENGTH} characters from {@code A-Z a-z 0-9 . _ -}
   * in {@code /}-separated segments, none of them empty, {@code .} or {@code ..}.
   */
  static String requirePrefix(String prefix) {
    Objects.requireNonNull(prefix, "keyPrefix must not be null");
    if (prefix.isEmpty() || prefix.length() > MAX_PREFIX_LENGTH) {
      throw new IllegalArgumentException("keyPrefix must be 1 to " + MAX_PREFIX_LENGTH
          + " characters long, was " + prefix.length() + "; use a short name such as \"leases\" or"
          + " \"myapp/leases\"");
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-' || c == '/';
      if (!ok) {
        throw new IllegalArgumentException("keyPrefix must use only A-Z a-z 0-9 . _ - and '/' between"
            + " segments (no white space, control, glob or non-ASCII characters); found "
            + describe(c) + " at index " + i);
      }
    }
    for (String segment : prefix.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw new IllegalArgumentException("keyPrefix \"" + prefix + "\" must not start or end with"
            + " '/', contain '//', or have '.' or '..' segments; use e.g. \"myapp/leases\"");
      }
    }
    return prefix;
  }

  ByteSequence leaseKey(String name) {
    return key("lease", LeaseArguments.requireName(name));
  }

  ByteSequence lastKey(String name) {
    return key("last", LeaseArguments.requireName(name));
  }

  ByteSequence fenceKey(String resource) {
    return key("fence", resource);
  }

  private ByteSequence key(String kind, String name) {
    return ByteSequence.from(prefix + "/" + kind + "/" + encode(name), StandardCharsets.UTF_8);
  }

  static String encode(String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(bytes.length + 8);
    for (byte b : bytes) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '.' || c == '_' || c == '~') {
        sb.append((char) c);
      } else {
        sb.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
    return sb.toString();
  }

  private static String describe(char c) {
    return Character.isISOControl(c) || Character.isWhitespace(c)
        ? String.format("U+%04X", (int) c)
        : "'" + c + "'";
  }
}
