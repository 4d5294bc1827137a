package dev.leases.etcd;

import dev.leases.FencedOutException;
import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Fenced writes to keys kept in etcd: a write carrying fencing token {@code t} lands only if no
 * write with a larger token has landed on that key before; {@code t} equal to the highest is accepted
 * again (one leader writes many times under one token). A rejected write changes nothing and throws
 * {@link FencedOutException}.
 *
 * <p>The highest accepted token of key {@code k} is kept in a separate fence key
 * ({@code <prefix>/fence/<k, percent-encoded>}) as a zero-padded 19-digit decimal, so that etcd's
 * byte-wise value comparison orders tokens numerically. Each write is one transaction:
 * {@code If(value(fence) > t) Then(get fence) Else(put fence = t, put k = value)} — check and write
 * are atomic, with no read-modify-write loop. A missing fence key compares false, so the first write
 * is accepted. Only write {@code k} through this class; a plain put bypasses the fence.
 *
 * <p><b>Reserved keys.</b> Everything under {@code <prefix>/} belongs to this library (lease,
 * companion and fence keys): a resource key there is refused with {@link IllegalArgumentException},
 * so a fenced write can neither detach a lease key from its etcd lease (it would never expire) nor
 * overwrite another resource's fence. Give the fence the {@code keyPrefix} of the
 * {@link EtcdLeaseStore} whose tokens it checks (both default to
 * {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX}); keys of stores with other prefixes are not protected.
 * Resource keys must be well-formed UTF-16 without control characters (an unpaired surrogate has no
 * UTF-8 form, so two keys would become one).
 *
 * <p>Thread-safe; does not own the client.
 */
public final class EtcdFence {

  private static final int DIGITS = 19; // Long.MAX_VALUE has 19 decimal digits

  private final KV kv;
  private final KeyLayout keys;
  private final Calls calls;

  /**
   * A fence with key prefix {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX} and 5 s calls.
   *
   * @param client the client to write with; the fence does not close it
   */
  public EtcdFence(Client client) {
    this(client, EtcdLeaseStore.DEFAULT_KEY_PREFIX, EtcdLeaseStore.DEFAULT_CALL_TIMEOUT);
  }

  /**
   * A fence with its own key prefix and call timeout.
   *
   * @param client the client to write with; the fence does not close it
   * @param keyPrefix the key prefix of the store whose tokens are checked (same rules as
   *     {@link EtcdLeaseStore.Builder#keyPrefix}): fence keys live under it, resource keys may not
   * @param callTimeout the longest one write or read may take
   */
  public EtcdFence(Client client, String keyPrefix, Duration callTimeout) {
    this(client, keyPrefix, callTimeout, () -> false, Calls.CLIENT_ENDPOINTS, null);
  }

  /** A fence on a store's own client ({@link EtcdLeaseStore#fence()}): closed with the store. */
  EtcdFence(Client client, String keyPrefix, Duration callTimeout, BooleanSupplier closed,
      String endpoints, @Nullable String user) {
    this.kv = Objects.requireNonNull(client, "client must not be null").getKVClient();
    this.keys = new KeyLayout(keyPrefix);
    this.calls = new Calls(LeaseArguments.requirePositive("callTimeout", callTimeout), closed,
        endpoints, "EtcdFence", user, keys.prefix());
  }

  /** {@link #write(String, long, byte[])} with {@code value} in UTF-8. */
  public long write(String key, long token, String value) {
    Objects.requireNonNull(value, "value must not be null");
    return write(key, token, value.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Writes {@code value} to {@code key} if {@code token} is at least the highest token accepted
   * for it, and raises the fence to {@code token}.
   *
   * @return the etcd revision of the write
   * @throws IllegalArgumentException if {@code key} is not well-formed text or lies under this
   *     fence's key prefix (reserved for the library's own keys)
   * @throws FencedOutException if a larger token has written to {@code key}; nothing changed
   * @throws LeaseStoreUnavailableException if etcd did not answer in time (outcome unknown)
   */
  public long write(String key, long token, byte[] value) {
    ByteSequence target = requireKey(key);
    Objects.requireNonNull(value, "value must not be null");
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token must be positive, was " + token
          + "; pass the token of the lease grant this write is made under");
    }
    ByteSequence fence = keys.fenceKey(key);
    ByteSequence encoded = encode(token);
    ByteSequence data = ByteSequence.from(value);
    // Not repeated on failure: a repeat after a lost answer could be fenced by a later writer
    // and report a rejection for a write that landed.
    TxnResponse r = calls.once(() -> kv.txn()
        .If(new Cmp(fence, Cmp.Op.GREATER, CmpTarget.value(encoded)))
        .Then(Op.get(fence, GetOption.DEFAULT))
        .Else(Op.put(fence, encoded, PutOption.DEFAULT), Op.put(target, data, PutOption.DEFAULT))
        .commit(), calls.budget(), "fenced write to '" + key + "'");
    if (r.isSucceeded()) {
      KeyValue f = r.getGetResponses().get(0).getKvs().stream().findFirst().orElse(null);
      throw new FencedOutException(key, token, f == null ? -1 : decode(f));
    }
    return r.getHeader().getRevision();
  }

  /**
   * The highest token accepted for {@code key}, empty if none has written through a fence. Refuses
   * the same keys as {@link #write(String, long, byte[])}.
   */
  public OptionalLong highestToken(String key) {
    requireKey(key);
    GetResponse r = calls.retrying(() -> kv.get(keys.fenceKey(key)), calls.budget(),
        "read the fence of '" + key + "'");
    if (r.getKvs().isEmpty()) {
      return OptionalLong.empty();
    }
    long t = decode(r.getKvs().get(0));
    return t < 0 ? OptionalLong.empty() : OptionalLong.of(t);
  }

  private ByteSequence requireKey(String key) {
    return ByteSequence.from(keys.requireResource(key), StandardCharsets.UTF_8);
  }

  static ByteSequence encode(long token) {
    return ByteSequence.from(String.format("%0" + DIGITS + "d", token), StandardCharsets.US_ASCII);
  }

  /** The token in a fence key, or -1 if it holds something else. */
  static long decode(KeyValue kv) {
    String s = kv.getValue().toString(StandardCharsets.US_ASCII);
    if (s.length() != DIGITS) {
      return -1;
    }
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
