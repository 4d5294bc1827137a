package dev.leases.redis;

import dev.leases.LeaseArguments;
import dev.leases.once.RunKeys;
import dev.leases.spi.KeyText;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

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
 * <p>The run ledger of job {@code j} ({@link RedisRunLedger}) keeps its keys under the tag of the
 * job's lease {@code n = once/j}, beside the lease's keys: {@code {p:E(n)}:ledger:fence},
 * {@code :ledger:seq}, {@code :ledger:attempts} and {@code :ledger:done}. All of these suffixes are
 * reserved ({@link #isStoreKey}).
 *
 * <p>{@code E} percent-encodes the UTF-8 bytes of the name except {@code A-Z a-z 0-9 - . _ ~ /}.
 * The encoding is injective and its output never contains {@code { } : % * ? [ ] \} or white space,
 * so a hostile name cannot end the hash tag early, collide with another name or prefix, or act as
 * a glob in {@code SCAN MATCH}. Names like {@code billing-nightly} stay readable.
 */
final class KeyLayout {

  /** Longest accepted key prefix. */
  static final int MAX_PREFIX_LENGTH = KeyText.MAX_PREFIX_LENGTH;

  private static final String LEASE = ":lease";
  private static final String FENCE = ":fence";
  private static final String LAST = ":last";
  private static final String LEDGER_FENCE = ":ledger:fence";
  private static final String LEDGER_SEQ = ":ledger:seq";
  private static final String LEDGER_ATTEMPTS = ":ledger:attempts";
  private static final String LEDGER_DONE = ":ledger:done";
  private static final List<String> SUFFIXES =
      List.of(LEASE, FENCE, LAST, LEDGER_FENCE, LEDGER_SEQ, LEDGER_ATTEMPTS, LEDGER_DONE);
  /** Characters besides ASCII letters and digits that {@link #encode} may output. */
  private static final String ENCODED_PUNCTUATION = "-._~/%";

  /**
   * Most names one batch script takes: a script blocks the server while it runs (under 1 ms for
   * 100 renewals on a 2-core machine), so a batch of {@link dev.leases.LeaseStore#MAX_BATCH_SIZE}
   * names goes as several scripts, pipelined. Smaller scripts also start the server sooner: the
   * first runs while the client still sends the rest (10,000 renewals, round p50 on one machine,
   * two runs each: 73-77 ms in scripts of 100, 79-82 ms in scripts of 250).
   */
  static final int MAX_NAMES_PER_SCRIPT = 100;

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

  /** The lease, fence and last keys of {@code name}, in that order (one encoding of the name). */
  List<String> leaseKeys(String name) {
    return List.of(leaseKeyArray(name));
  }

  /** {@link #leaseKeys} as the array a single call's script takes. */
  String[] leaseKeyArray(String name) {
    String tag = tag(name);
    return new String[] {tag + LEASE, tag + FENCE, tag + LAST};
  }

  /** The keys the release script takes for {@code name}: lease and last (one encoding). */
  String[] releaseKeyArray(String name) {
    String tag = tag(name);
    return new String[] {tag + LEASE, tag + LAST};
  }

  String leaseKey(String name) {
    return tag(name) + LEASE;
  }

  String fenceKey(String name) {
    return tag(name) + FENCE;
  }

  String lastKey(String name) {
    return tag(name) + LAST;
  }

  /**
   * The run ledger's keys of {@code job}, under the tag of its lease {@code once/<job>}: fence
   * (string, the highest token that began an attempt), seq (string, the last attempt id), attempts
   * (hash of every attempt's fields), done (hash: run key → attempt id of its completion).
   */
  List<String> ledgerKeys(String job) {
    String tag = tag(RunKeys.leaseName(job));
    return List.of(tag + LEDGER_FENCE, tag + LEDGER_SEQ, tag + LEDGER_ATTEMPTS, tag + LEDGER_DONE);
  }

  /**
   * Splits {@code names} into the groups that one script may take: at most
   * {@value #MAX_NAMES_PER_SCRIPT} names each and, when {@code bySlot} (a cluster, whose nodes
   * refuse a script with keys of several slots), only names whose tags share a slot. Groups keep
   * the order of {@code names} within them, and come in the order of their first name.
   */
  List<List<String>> scriptGroups(List<String> names, boolean bySlot) {
    if (!bySlot && names.size() <= MAX_NAMES_PER_SCRIPT) {
      return List.of(names);
    }
    Map<Integer, List<String>> bySlots = new LinkedHashMap<>();
    for (String n : names) {
      int slot = bySlot ? SlotHash.getSlot(tag(n)) : 0;
      bySlots.computeIfAbsent(slot, k -> new ArrayList<>()).add(n);
    }
    List<List<String>> groups = new ArrayList<>();
    for (List<String> slot : bySlots.values()) {
      for (int i = 0; i < slot.size(); i += MAX_NAMES_PER_SCRIPT) {
        groups.add(slot.subList(i, Math.min(slot.size(), i + MAX_NAMES_PER_SCRIPT)));
      }
    }
    return groups;
  }

  /** The pub/sub channel on which releases are announced; the message is the raw lease name. */
  String releaseChannel() {
    return prefix + ":released";
  }

  /**
   * Whether {@code key} has the shape of a key that a store with <em>some</em> prefix uses:
   * {@code {<prefix>:<encoded name>}:lease}, {@code :fence}, {@code :last} or one of the run
   * ledger's {@code :ledger:fence|seq|attempts|done}, with a valid prefix
   * and only characters the encoding outputs. Other code must never write such keys.
   */
  static boolean isStoreKey(String key) {
    int close = key.indexOf('}');
    if (!key.startsWith("{") || close < 0 || !SUFFIXES.contains(key.substring(close + 1))) {
      return false;
    }
    String tag = key.substring(1, close);
    int sep = tag.lastIndexOf(':');
    if (sep < 0 || sep == tag.length() - 1 || !isPrefix(tag.substring(0, sep))) {
      return false;
    }
    return tag.substring(sep + 1).chars().allMatch(c -> (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || ENCODED_PUNCTUATION.indexOf(c) >= 0);
  }

  private static boolean isPrefix(String prefix) {
    try {
      requirePrefix(prefix);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** Percent-encodes the UTF-8 bytes of {@code name} outside {@code A-Z a-z 0-9 - . _ ~ /}. */
  static String encode(String name) {
    return KeyText.percentEncode(name, "/");
  }

  /**
   * The {@code SCAN MATCH} pattern of the lease keys ({@code :lease}, no other suffix) of the
   * names that start with {@code namePrefix}, every character but the one {@code *} literal. It
   * may also match keys that are not this prefix's lease keys (a nested prefix's, or a key written
   * by something else): {@link #nameOfLeaseKey} tells them apart.
   */
  String leaseKeyPattern(String namePrefix) {
    return globLiteral("{" + prefix + ":" + encode(namePrefix)) + "*" + globLiteral("}" + LEASE);
  }

  /**
   * The name whose lease key {@code key} is under this prefix, or null when it is not one: another
   * prefix's key (a nested prefix {@code p:q} has keys <code>{p:q:...}</code>, which a pattern of
   * {@code p} matches), another suffix, or text the encoding never outputs (not canonical,
   * malformed UTF-8, not a valid lease name).
   */
  @Nullable String nameOfLeaseKey(String key) {
    String head = "{" + prefix + ":";
    String tail = "}" + LEASE;
    if (!key.startsWith(head) || !key.endsWith(tail)
        || key.length() <= head.length() + tail.length()) {
      return null;
    }
    String encoded = key.substring(head.length(), key.length() - tail.length());
    String name = KeyText.decodeName(encoded, '%');
    // ':' of a nested prefix, braces, lower-case hex: not what encode writes
    return name != null && encoded.equals(encode(name)) ? name : null;
  }

  /**
   * {@code text} as a Redis glob that matches exactly itself: each of {@code * ? [ ] \} preceded
   * by a backslash (Redis's {@code stringmatchlen} reads {@code \x} as a literal {@code x}; no other
   * character is special outside brackets).
   */
  static String globLiteral(String text) {
    StringBuilder b = new StringBuilder(text.length() + 8);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if ("*?[]\\".indexOf(c) >= 0) {
        b.append('\\');
      }
      b.append(c);
    }
    return b.toString();
  }

}
