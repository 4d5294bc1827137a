package dev.leases.consul;

import dev.leases.FencedOutException;
import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.option.ImmutablePutOptions;

/**
 * Fenced writes to resources kept in Consul KV: a write lands only if its fencing token is at least
 * the highest token the resource has accepted.
 *
 * <p>The highest accepted token is kept in the resource key's own {@code Flags} field, so value and
 * fence change together in one check-and-set write ({@code PUT ?cas=<ModifyIndex>&flags=<token>}):
 * read the key; a token below its flags is rejected with {@link FencedOutException} and nothing is
 * written; otherwise write with {@code cas} set to the index just read ({@code 0}: only if the key
 * does not exist yet). A check-and-set that loses to a concurrent write reads again and retries, so
 * a lower token can never overwrite a higher one that landed in between.
 *
 * <p>{@code >=}, not {@code >}: one leader may write many times under one token. Do not use the
 * {@code Flags} of fenced keys for anything else; a plain PUT of the key bypasses the fence and
 * deleting the key resets it. Tokens must be positive, as every {@link dev.leases.LeaseGrant} token
 * is.
 *
 * <p>The client stays yours; each call is bounded by the timeout given to {@link #of}. Thread-safe.
 */
public final class ConsulFence {

  private final KeyValueClient kv;
  private final ConsulCalls calls;

  private ConsulFence(KeyValueClient kv, ConsulCalls calls) {
    this.kv = kv;
    this.calls = calls;
  }

  /** A fence over {@code client}; every call (its retries included) is bounded by {@code timeout}. */
  public static ConsulFence of(Consul client, Duration timeout) {
    Objects.requireNonNull(client, "client must not be null");
    LeaseArguments.requirePositive("timeout", timeout);
    return new ConsulFence(client.keyValueClient(), new ConsulCalls(timeout, "Consul"));
  }

  /**
   * Writes {@code value} (UTF-8) to {@code resourceKey} if {@code token} is at least the highest
   * accepted.
   *
   * @throws FencedOutException when a higher token has written; nothing changed
   * @throws LeaseStoreUnavailableException when Consul did not answer in time or failed; the write
   *     may or may not have landed
   */
  public void put(String resourceKey, String value, long token) {
    Objects.requireNonNull(value, "value must not be null");
    put(resourceKey, value.getBytes(StandardCharsets.UTF_8), token);
  }

  /**
   * Writes {@code value} to {@code resourceKey} if {@code token} is at least the highest accepted.
   *
   * @throws FencedOutException when a higher token has written; nothing changed
   * @throws LeaseStoreUnavailableException when Consul did not answer in time or failed; the write
   *     may or may not have landed
   */
  public void put(String resourceKey, byte[] value, long token) {
    requireResourceKey(resourceKey);
    Objects.requireNonNull(value, "value must not be null");
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token must be positive, was " + token
          + "; pass the token of your current LeaseGrant");
    }
    byte[] bytes = value.clone();
    long deadline = System.nanoTime() + calls.timeout().toNanos();
    calls.run("fenced put of '" + resourceKey + "'", () -> {
      while (System.nanoTime() - deadline < 0) {
        Optional<Value> current = kv.getValue(resourceKey);
        long fence = current.map(Value::getFlags).orElse(0L);
        if (Long.compareUnsigned(token, fence) < 0) {
          throw new FencedOutException(resourceKey, token, fence < 0 ? -1 : fence);
        }
        long cas = current.map(Value::getModifyIndex).orElse(0L);
        if (kv.putValue(resourceKey, bytes, token, ImmutablePutOptions.builder().cas(cas).build())) {
          return null;
        }
        // another write landed between our read and our write: look again
      }
      throw new LeaseStoreUnavailableException("fenced put of '" + resourceKey + "': lost every"
          + " check-and-set race to concurrent writers within " + calls.timeout()
          + "; nothing was written by this call", null);
    });
  }

  /** The highest token {@code resourceKey} has accepted, empty if none (or no such key). */
  public OptionalLong highestToken(String resourceKey) {
    requireResourceKey(resourceKey);
    return calls.run("read fence of '" + resourceKey + "'", () -> kv.getValue(resourceKey)
        .map(Value::getFlags).filter(f -> f != 0)
        .map(OptionalLong::of).orElse(OptionalLong.empty()));
  }

  /**
   * A resource key as Consul's KV endpoint accepts it unchanged: non-blank, no control characters,
   * no leading or trailing space, non-empty {@code /}-separated segments none of which is {@code .}
   * or {@code ..} (path normalisation would send the write to another key), and no percent escape
   * that decodes to a space or {@code ..} (Consul refuses those).
   */
  static String requireResourceKey(String key) {
    Objects.requireNonNull(key, "resourceKey must not be null");
    if (key.isBlank()) {
      throw new IllegalArgumentException("resourceKey must not be blank");
    }
    for (int i = 0; i < key.length(); i++) {
      if (Character.isISOControl(key.charAt(i))) {
        throw new IllegalArgumentException("resourceKey must not contain control characters (U+"
            + String.format("%04X", (int) key.charAt(i)) + " at index " + i + ")");
      }
    }
    if (key.startsWith(" ") || key.endsWith(" ")) {
      throw new IllegalArgumentException("resourceKey \"" + key + "\" starts or ends with a space,"
          + " which Consul refuses; trim it");
    }
    for (String segment : key.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw new IllegalArgumentException("resourceKey \"" + key + "\" has an empty, '.' or '..'"
            + " path segment (or a leading or trailing '/'), which HTTP path normalisation would"
            + " turn into another key; use segments joined by single '/', e.g. \"orders/state\"");
      }
    }
    String decoded = percentDecoded(key);
    if (decoded != null && (decoded.contains("..") || decoded.contains(" "))) {
      throw new IllegalArgumentException("resourceKey \"" + key + "\" percent-decodes to \""
          + decoded + "\", which contains a space or '..': Consul refuses such keys; avoid '%'"
          + " escapes in resource keys");
    }
    return key;
  }

  /** The key with its {@code %XX} escapes decoded (as Go's PathUnescape), or null if malformed. */
  private static String percentDecoded(String key) {
    if (key.indexOf('%') < 0) {
      return null;
    }
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] == '%') {
        if (i + 2 >= bytes.length) {
          return null;
        }
        int hi = Character.digit(bytes[i + 1], 16);
        int lo = Character.digit(bytes[i + 2], 16);
        if (hi < 0 || lo < 0) {
          return null;
        }
        out.write(hi * 16 + lo);
        i += 2;
      } else {
        out.write(bytes[i]);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return "ConsulFence[timeout=" + calls.timeout() + "]";
  }
}
