package dev.leases.consul;

import dev.leases.LeaseArguments;
import dev.leases.spi.KeyText;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Where a lease lives in Consul's KV store: one key per lease, {@code <prefix>/<E(name)>}.
 *
 * <p>{@code E} escapes every UTF-8 byte of the name outside {@code A-Z a-z 0-9 - _} as {@code ~XX}
 * (two upper-case hex digits). Its output never contains {@code /}, {@code .}, {@code %} or white
 * space, so a name cannot add a path segment, form a {@code .} or {@code ..} segment (which URL
 * normalisation and Consul's own {@code path.Clean} of KV paths would resolve to another key), or
 * trip Consul's KV key validation (since 1.22 it percent-decodes keys and refuses those whose
 * decoding contains a space or {@code ..}: percent-encoding the name would make such names
 * unusable). The encoding is injective, so two names share a key only if they are equal, and no
 * name's key collides with the key of a longer prefix. Names such as {@code billing-nightly} stay
 * readable in the Consul UI.
 *
 * <p>Run records ({@link ConsulRunLedger}) live in a sub-namespace reserved next to the leases,
 * {@code <prefix>/}{@value #LEDGER_SEGMENT}{@code /<E(job)>/...}: {@code E} never produces a
 * {@code .}, so no lease key equals or contains that segment, and a job's keys cannot reach into
 * another job's ({@code E(job)} holds no {@code /}). {@link ConsulFence} refuses the whole
 * {@code <prefix>/} tree for resources, this namespace included.
 */
final class KeyLayout {

  /** Longest accepted key prefix. */
  static final int MAX_PREFIX_LENGTH = KeyText.MAX_PREFIX_LENGTH;

  /** The path segment under the prefix that holds run records; no lease key can contain it. */
  static final String LEDGER_SEGMENT = ".once";

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private final String prefix;

  KeyLayout(String prefix) {
    this.prefix = requirePrefix(prefix);
  }

  String prefix() {
    return prefix;
  }

  String keyOf(String name) {
    return prefix + "/" + encode(LeaseArguments.requireName(name));
  }

  /**
   * The text every key of a name starting with {@code namePrefix} starts with:
   * {@code <prefix>/E(namePrefix)}. {@code E} works byte by byte and never cuts an escape, so a
   * name starts with {@code namePrefix} exactly when its key starts with this; it is plain URL
   * text ({@code A-Z a-z 0-9 - _ ~ . /}), whatever the name prefix holds.
   */
  String keysFrom(String namePrefix) {
    return prefix + "/" + encode(namePrefix);
  }

  /**
   * The lease name {@code key} stands for, or null for a key this layout never writes: outside
   * {@code <prefix>/}, in a folder below it (run records, another store under a longer prefix),
   * a malformed or non-canonical escape, bytes that are not UTF-8, or text no lease name has.
   * Only a key {@link #keyOf} gives for a valid name decodes.
   */
  @Nullable String nameOf(String key) {
    String head = prefix + "/";
    if (!key.startsWith(head) || key.length() == head.length()) {
      return null;
    }
    String text = key.substring(head.length());
    String name = KeyText.decodeName(text, '~');
    if (name == null) {
      return null;
    }
    return encode(name).equals(text) ? name : null;
  }

  /**
   * The folder of job {@code job}'s run records, ending in {@code /}:
   * {@code <prefix>/.once/<E(job)>/}. The job name is not checked here.
   */
  String ledgerFolderOf(String job) {
    return prefix + "/" + LEDGER_SEGMENT + "/" + encode(job) + "/";
  }

  /**
   * Checks a key prefix: well-formed UTF-16, 1 to {@value #MAX_PREFIX_LENGTH} characters from
   * {@code A-Z a-z 0-9 . _ - /}, made of non-empty {@code /}-separated segments none of which is
   * {@code .} or {@code ..}. Anything else could be rewritten on its way to Consul (empty and dot
   * segments are collapsed by URL normalisation, so the store would read one key and lock another),
   * or is unreadable in the UI.
   */
  static String requirePrefix(String prefix) {
    LeaseArguments.requireWellFormed("keyPrefix", prefix); // says so, rather than "found '?'"
    KeyText.requirePrefix(prefix, "._-/", "myapp/leases");
    for (String segment : prefix.split("/", -1)) {
      if (segment.isEmpty()) {
        throw new IllegalArgumentException("keyPrefix \"" + prefix + "\" has an empty path segment"
            + " (a leading or trailing '/', or '//'); write it as segments joined by single '/'"
            + " such as \"myapp/leases\"");
      }
      if (segment.equals(".") || segment.equals("..")) {
        throw new IllegalArgumentException("keyPrefix \"" + prefix + "\" has a '" + segment
            + "' segment, which URL normalisation would resolve to another key; remove it");
      }
    }
    return prefix;
  }

  /**
   * Escapes the UTF-8 bytes of {@code name} outside {@code A-Z a-z 0-9 - _} as {@code ~XX}. Not
   * {@link KeyText#percentEncode}: Consul refuses keys whose percent-decoding holds a space or
   * {@code ..}, and keeping {@code .} plain would let a name be a {@code ..} path segment.
   */
  static String encode(String name) {
    byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(bytes.length + 8);
    for (byte b : bytes) {
      int c = b & 0xFF;
      boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_';
      if (plain) {
        sb.append((char) c);
      } else {
        sb.append('~').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
      }
    }
    return sb.toString();
  }
}
