package dev.leases.etcd;

import dev.leases.LeaseArguments;
import dev.leases.spi.KeyText;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

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
 *   <li>{@code p/lease} — never written: every batch transaction deletes it (a no-op) so that etcd
 *       checks the caller's write permission on the prefix ({@link #writeGuardKey}).
 *   <li>{@code p/once/E(j)/} — the run records of job {@code j} kept by {@link EtcdRunLedger}:
 *       {@code fence} (the highest token that began an attempt, 19 zero-padded digits),
 *       {@code attempt/NNNNNNNNNNNNNNNNNNN} (one record per attempt, the id zero-padded to 19 digits
 *       so that key order is id order) and {@code done/E(run)} (the completion of a run).
 * </ul>
 *
 * <p>Everything under {@code p/} is reserved: a resource key guarded by a fence with prefix {@code p}
 * must lie outside it ({@link #requireResource}), so no fenced write reaches a lease, companion,
 * fence or run-ledger key, and no resource key equals another resource's fence key.
 *
 * <p>{@code E} percent-encodes the UTF-8 bytes of the name except {@code A-Z a-z 0-9 - . _ ~}. The
 * encoding is injective and never produces {@code /}, so a name cannot reach into another prefix's
 * keys (prefix {@code p} with name {@code lease/x} vs. prefix {@code p/lease} with name {@code x}).
 */
final class KeyLayout {

  /** Longest accepted key prefix. */
  static final int MAX_PREFIX_LENGTH = KeyText.MAX_PREFIX_LENGTH;

  /** Longest accepted key of a fenced resource. */
  static final int MAX_RESOURCE_LENGTH = 4096;

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
    KeyText.requirePrefix(prefix, "._-/", "myapp/leases");
    for (String segment : prefix.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw new IllegalArgumentException("keyPrefix \"" + prefix + "\" must not start or end with"
            + " '/', contain '//', or have '.' or '..' segments; use e.g. \"myapp/leases\"");
      }
    }
    return prefix;
  }

  ByteSequence leaseKey(String name) {
    return key(Named.LEASE.segment, LeaseArguments.requireName(name));
  }

  ByteSequence lastKey(String name) {
    return key(Named.LAST.segment, LeaseArguments.requireName(name));
  }

  /**
   * {@code p/lease}: a key inside the prefix that nothing writes (lease keys are
   * {@code p/lease/E(n)}). Deleting it needs write permission on the prefix and deletes nothing;
   * see {@code EtcdLeaseStore}'s nested transactions.
   */
  ByteSequence writeGuardKey() {
    return utf8(prefix + "/lease");
  }

  ByteSequence fenceKey(String resource) {
    return key("fence", requireResource(resource));
  }

  /**
   * Checks the key of a resource guarded by {@link EtcdFence}: text as {@link
   * LeaseArguments#requireText} demands (well-formed UTF-16, so that distinct keys stay distinct in
   * UTF-8) and outside {@code prefix/}, the namespace of this library's own keys. A fenced write there
   * could overwrite a lease key (detaching it from its etcd lease, so it never expires), a companion
   * key, or another resource's fence key (lowering that fence).
   */
  String requireResource(String key) {
    LeaseArguments.requireText("resource key", key, MAX_RESOURCE_LENGTH);
    if (key.startsWith(prefix + "/")) {
      throw new IllegalArgumentException("resource key '" + LastTenure.abbreviate(key)
          + "' is inside '" + prefix + "/', reserved for the lease, companion, fence and run-ledger"
          + " keys of key prefix '" + prefix + "'; keep guarded data outside it, e.g. under '" + prefix + "-data/'");
    }
    return key;
  }

  /** The kinds of key that carry a lease name: the lease key and the companion key. */
  enum Named {
    LEASE("lease"), LAST("last");

    final String segment;

    Named(String segment) {
      this.segment = segment;
    }
  }

  /**
   * The first key of {@code kind} whose name may start with {@code namePrefix}: {@code
   * p/kind/E(namePrefix)}. {@code E} works byte by byte, so a name starts with {@code namePrefix}
   * exactly when its key starts with this (an escape is never cut: {@code E(namePrefix)} ends
   * where a byte of the name ends).
   */
  ByteSequence namedFrom(Named kind, String namePrefix) {
    return utf8(prefix + "/" + kind.segment + "/" + encode(namePrefix));
  }

  /**
   * The lease name a key of {@code kind} stands for, or null for a key this layout never writes
   * there: one of another store under a longer prefix (its key holds another {@code /}), a
   * malformed or non-canonical escape, bytes that are not UTF-8, or text no lease name has. Only
   * a key {@code E} gives for a valid name decodes, so decoding is the inverse of {@link #leaseKey}
   * and {@link #lastKey}.
   */
  @Nullable String nameOf(Named kind, ByteSequence key) {
    byte[] head = (prefix + "/" + kind.segment + "/").getBytes(StandardCharsets.UTF_8);
    byte[] k = key.getBytes();
    if (k.length <= head.length || !Arrays.equals(k, 0, head.length, head, 0, head.length)) {
      return null;
    }
    String name = KeyText.decodeName(
        new String(k, head.length, k.length - head.length, StandardCharsets.UTF_8), '%');
    if (name == null) {
      return null;
    }
    byte[] again = encode(name).getBytes(StandardCharsets.UTF_8);
    return Arrays.equals(again, 0, again.length, k, head.length, k.length) ? name : null;
  }

  private ByteSequence key(String kind, String name) {
    return utf8(prefix + "/" + kind + "/" + encode(name));
  }

  /** {@code p/once/E(job)/}: every run-ledger key of {@code job} starts with it. */
  ByteSequence runJobPrefix(String job) {
    return utf8(runJob(job));
  }

  /** The job's run fence: the highest token that began an attempt of {@code job}. */
  ByteSequence runFenceKey(String job) {
    return utf8(runJob(job) + "fence");
  }

  /** The prefix of the job's attempt records; their keys sort in attempt-id order. */
  ByteSequence runAttemptPrefix(String job) {
    return utf8(runJob(job) + "attempt/");
  }

  ByteSequence runAttemptKey(String job, long attempt) {
    if (attempt <= 0) {
      throw new IllegalArgumentException("an attempt id is positive, got " + attempt);
    }
    return utf8(runJob(job) + "attempt/" + String.format("%019d", attempt));
  }

  /** The completion record of (job, run). */
  ByteSequence runDoneKey(String job, String run) {
    return utf8(runJob(job) + "done/" + encode(run));
  }

  private String runJob(String job) {
    return prefix + "/once/" + encode(job) + "/";
  }

  private static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  static String encode(String s) {
    return KeyText.percentEncode(s, "");
  }

}
