package dev.leases.consul;

import dev.leases.FencedOutException;
import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;
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
 * <p>Namespace: the fence lives in the resource key itself, so no resource key can equal another
 * resource's fence. The lease store's keys are reserved: a resource key equal to the lease key
 * prefix or under {@code <prefix>/} (also once Consul has percent-decoded it) is refused with
 * {@link IllegalArgumentException}, because a fenced write there would overwrite a lease's lock key
 * (Consul accepts plain writes to a locked key). {@link #of(Consul, Duration)} reserves
 * {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}; pass your stores' prefix to
 * {@link #of(Consul, Duration, String)} if they use another.
 *
 * <p>The client stays yours; each call is bounded by the timeout given to {@link #of}, and runs on
 * a small pool of the fence's own (at most {@value ConsulCalls#DEFAULT_MAX_THREADS} threads, which
 * end when idle; beyond that a call fails at once with {@link LeaseStoreUnavailableException}).
 * Thread-safe.
 */
public final class ConsulFence {

  /** Longest accepted resource key. */
  public static final int MAX_RESOURCE_KEY_LENGTH = 1024;

  private final KeyValueClient kv;
  private final ConsulCalls calls;
  private final String reservedPrefix;

  private ConsulFence(KeyValueClient kv, ConsulCalls calls, String reservedPrefix) {
    this.kv = kv;
    this.calls = calls;
    this.reservedPrefix = reservedPrefix;
  }

  /**
   * A fence over {@code client}; every call (its retries included) is bounded by {@code timeout}.
   * Refuses resource keys under the default lease key prefix
   * {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}.
   */
  public static ConsulFence of(Consul client, Duration timeout) {
    return of(client, timeout, ConsulLeaseStore.DEFAULT_KEY_PREFIX);
  }

  /**
   * A fence over {@code client} that refuses resource keys under {@code leaseKeyPrefix}, the key
   * prefix of your lease stores ({@link ConsulLeaseStore.Builder#keyPrefix(String)}).
   */
  public static ConsulFence of(Consul client, Duration timeout, String leaseKeyPrefix) {
    Objects.requireNonNull(client, "client must not be null");
    LeaseArguments.requirePositive("timeout", timeout);
    return new ConsulFence(client.keyValueClient(), new ConsulCalls(timeout, "Consul"),
        KeyLayout.requirePrefix(leaseKeyPrefix));
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
        ConsulCalls.ensureLive();
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
   * A resource key as Consul's KV endpoint accepts it unchanged: 1 to
   * {@value #MAX_RESOURCE_KEY_LENGTH} characters, non-blank, no control characters, well-formed
   * UTF-16 (an unpaired surrogate is sent as {@code ?}, so two keys would become one), no leading
   * or trailing space, non-empty {@code /}-separated segments none of which is {@code .} or
   * {@code ..} (path normalisation would send the write to another key), no percent escape that
   * decodes to a space or {@code ..} (Consul refuses those), and outside the lease store's prefix.
   */
  String requireResourceKey(String key) {
    LeaseArguments.requireText("resourceKey", key, MAX_RESOURCE_KEY_LENGTH);
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
    // Consul percent-decodes the request path: "leases%2Fx" is the key "leases/x"
    for (String seen : decoded == null ? new String[] {key} : new String[] {key, decoded}) {
      if (seen.equals(reservedPrefix) || seen.startsWith(reservedPrefix + "/")) {
        throw new IllegalArgumentException("resourceKey \"" + key + "\" is in the namespace"
            + " reserved for lease keys (\"" + reservedPrefix + "/...\"): a fenced write there would"
            + " overwrite a lease's lock key. Keep resources under another prefix, e.g. \"app/"
            + key + "\"");
      }
    }
    return key;
  }

  /** The key with its {@code %XX} escapes decoded (as Go's PathUnescape), or null if malformed. */
  private static @Nullable String percentDecoded(String key) {
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
    return "ConsulFence[timeout=" + calls.timeout() + ", reserved=" + reservedPrefix + "/]";
  }
}
