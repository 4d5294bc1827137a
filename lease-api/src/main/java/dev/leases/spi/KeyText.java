package dev.leases.spi;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Turning lease names into key text and checking key prefixes, for stores that keep leases under
 * string keys. Lease names are data and may hold any character; keys must not let a name end a
 * segment, a hash tag or a pattern early, nor collide with another name.
 */
public final class KeyText {

  /** Longest accepted key prefix. */
  public static final int MAX_PREFIX_LENGTH = 64;

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private KeyText() {}

  /**
   * Percent-encodes the UTF-8 bytes of {@code s} except ASCII letters, digits, {@code -._~} and the
   * characters in {@code alsoKeep}. Injective: two different names never give the same text, and
   * the output holds no character outside that set besides {@code %} and hex digits.
   *
   * @throws IllegalArgumentException if {@code s} is not well-formed UTF-16 (an unpaired surrogate
   *     has no UTF-8 encoding, so the encoding would not be injective)
   */
  public static String percentEncode(String s, String alsoKeep) {
    dev.leases.LeaseArguments.requireWellFormed("key text", s);
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(bytes.length + 8);
    for (byte b : bytes) {
      int c = b & 0xFF;
      boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '.' || c == '_' || c == '~'
          || (c < 0x80 && c != '%' && alsoKeep.indexOf(c) >= 0);
      if (plain) {
        sb.append((char) c);
      } else {
        sb.append('%').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
      }
    }
    return sb.toString();
  }

  /**
   * The lease name that escaped key text stands for, for stores that list names back from keys:
   * {@code escape} followed by two hex digits is that byte, any other ASCII character itself.
   * Null when the text is not a name: a non-ASCII character, a cut escape, bytes that are not
   * UTF-8, or text {@link dev.leases.LeaseArguments#requireName} refuses. Lenient about which
   * characters were escaped and about hex case: a caller that must accept only the text its own
   * encoder writes compares that encoding of the result with {@code encoded}.
   */
  public static @Nullable String decodeName(String encoded, char escape) {
    byte[] bytes = new byte[encoded.length()];
    int n = 0;
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      if (c == escape) {
        int hi = i + 2 < encoded.length() ? Character.digit(encoded.charAt(i + 1), 16) : -1;
        int lo = hi < 0 ? -1 : Character.digit(encoded.charAt(i + 2), 16);
        if (lo < 0) {
          return null;
        }
        bytes[n++] = (byte) (hi << 4 | lo);
        i += 2;
      } else if (c < 0x80) {
        bytes[n++] = (byte) c;
      } else {
        return null;
      }
    }
    try {
      String name = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes, 0, n)).toString();
      return dev.leases.LeaseArguments.requireName(name);
    } catch (CharacterCodingException | IllegalArgumentException e) {
      return null;
    }
  }

  /**
   * Checks a key prefix: 1 to {@value #MAX_PREFIX_LENGTH} characters, each an ASCII letter, a digit
   * or one of {@code punctuation}. The message names the allowed characters, the offending one and
   * {@code example}.
   */
  public static String requirePrefix(String prefix, String punctuation, String example) {
    Objects.requireNonNull(prefix, "keyPrefix must not be null");
    if (prefix.isEmpty() || prefix.length() > MAX_PREFIX_LENGTH) {
      throw new IllegalArgumentException("keyPrefix must be 1 to " + MAX_PREFIX_LENGTH
          + " characters long, was " + prefix.length() + "; use a short name such as \"" + example
          + "\"");
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || punctuation.indexOf(c) >= 0;
      if (!ok) {
        throw new IllegalArgumentException("keyPrefix must use only A-Z a-z 0-9 and "
            + String.join(" ", punctuation.split("")) + " (no braces, glob characters, white space,"
            + " control or non-ASCII characters); found " + describe(c) + " at index " + i
            + " in \"" + printable(prefix) + "\"; use e.g. \"" + example + "\"");
      }
    }
    return prefix;
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
