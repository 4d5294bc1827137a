package dev.leases.redis;

import dev.leases.FencedOutException;
import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Fenced writes to Redis resources: the write lands only if its fencing token is at least the
 * highest token the resource has accepted, checked and applied in one script. The highest token is
 * kept in the resource's {@link #fenceKeyOf(String) fence key}, in the same cluster slot, which
 * never expires.
 *
 * <p>{@code >=}, not {@code >}: one leader may write many times under one token. A lower token
 * changes nothing and throws {@link FencedOutException} carrying the highest token: the writer was
 * superseded while it was not looking and must stop — not log and carry on.
 *
 * <p>The fence protects only writes that go through it: a plain {@code SET} of the resource key
 * bypasses it, and deleting the fence key resets it. Tokens must be positive (as every
 * {@link dev.leases.LeaseGrant} token is); they are compared exactly, as decimal strings.
 *
 * <p>Resource keys are checked before anything is sent: well-formed UTF-16 (an unpaired
 * surrogate would become {@code ?} and alias another key), not a fence key (keys starting with
 * {@code leases:fence:} or {@code leases:fence-key:} are reserved), and not a
 * {@link RedisLeaseStore} or {@link RedisRunLedger} key
 * ({@code {<prefix>:<encoded name>}:lease|fence|last|ledger:...}); a fenced write to any of those
 * could lower a fence or a lease's token counter. Values and field names must be
 * well-formed UTF-16 too.
 *
 * <p>A connection whose Redis user lacks {@link RedisAcl#fenceRules} for the key makes a write
 * throw {@link RedisAccessDeniedException}, with nothing changed.
 *
 * <p>The connection stays yours; this class never closes it. Thread-safe.
 */
public final class RedisFence {

  /** Fence keys of resource keys with a hash tag: this prefix, then the resource key. */
  static final String TAGGED_PREFIX = "leases:fence:";
  /** Fence keys of resource keys without a hash tag: this prefix, then the key in braces. */
  static final String WHOLE_KEY_PREFIX = "leases:fence-key:";

  private final RedisScriptingAsyncCommands<String, String> commands;
  private final Duration timeout;

  private RedisFence(RedisScriptingAsyncCommands<String, String> commands, Duration timeout) {
    this.commands = commands;
    this.timeout = LeaseArguments.requirePositive("timeout", timeout);
  }

  /** A fence over a standalone connection; each write is bounded by {@code timeout}. */
  public static RedisFence of(StatefulRedisConnection<String, String> connection, Duration timeout) {
    Objects.requireNonNull(connection, "connection must not be null");
    return new RedisFence(connection.async(), timeout);
  }

  /** A fence over a cluster connection; each write is bounded by {@code timeout}. */
  public static RedisFence of(StatefulRedisClusterConnection<String, String> connection,
      Duration timeout) {
    Objects.requireNonNull(connection, "connection must not be null");
    return new RedisFence(connection.async(), timeout);
  }

  /**
   * {@code SET resourceKey value} if {@code token} is at least the highest accepted.
   *
   * @throws FencedOutException when a higher token has written; nothing changed
   * @throws LeaseStoreUnavailableException when Redis did not answer in time or failed; the write
   *     may or may not have landed
   */
  public void set(String resourceKey, String value, long token) {
    LeaseArguments.requireWellFormed("value", value);
    write(resourceKey, token, List.of("set", value));
  }

  /**
   * {@code HSET resourceKey field value ...} if {@code token} is at least the highest accepted.
   *
   * @throws FencedOutException when a higher token has written; nothing changed
   * @throws IllegalStateException when {@code resourceKey} holds something other than a hash;
   *     nothing changed and the fence did not move
   * @throws LeaseStoreUnavailableException when Redis did not answer in time or failed; the write
   *     may or may not have landed
   */
  public void hset(String resourceKey, Map<String, String> fields, long token) {
    Objects.requireNonNull(fields, "fields must not be null");
    if (fields.isEmpty()) {
      throw new IllegalArgumentException("fields must not be empty; pass at least one field");
    }
    List<String> args = new ArrayList<>(1 + 2 * fields.size());
    args.add("hset");
    fields.forEach((f, v) -> {
      args.add(LeaseArguments.requireWellFormed("field name", f));
      args.add(LeaseArguments.requireWellFormed("value of field '" + f + "'", v));
    });
    write(resourceKey, token, args);
  }

  /** The highest token {@code resourceKey} has accepted, empty if none. */
  public OptionalLong highestToken(String resourceKey) {
    String fenceKey = fenceKeyOf(resourceKey);
    List<Object> reply = Scripts.FENCED_READ.run(commands, ScriptOutputType.MULTI,
        new String[] {fenceKey}, new String[0], timeout, caller(resourceKey));
    Object v = reply == null || reply.isEmpty() ? null : reply.get(0);
    return v instanceof String s ? OptionalLong.of(Long.parseLong(s)) : OptionalLong.empty();
  }

  /**
   * The key that holds {@code resourceKey}'s highest accepted token, in the same Redis Cluster
   * slot, and distinct for distinct resource keys: {@code leases:fence:} before a key with a hash
   * tag ({@code {orders}:state} → {@code leases:fence:{orders}:state}, same tag); otherwise
   * {@code leases:fence-key:} before the whole key made the tag ({@code orders:state} →
   * {@code leases:fence-key:{orders:state}}, which hashes exactly as the key does).
   *
   * @throws IllegalArgumentException for a key that is empty, not well-formed UTF-16, itself a fence
   *     key or a lease store key, or has no hash tag but contains {@code '}'} (give it a hash tag)
   */
  public static String fenceKeyOf(String resourceKey) {
    LeaseArguments.requireWellFormed("resource key", resourceKey);
    if (resourceKey.isEmpty()) {
      throw new IllegalArgumentException("resource key must not be empty");
    }
    if (resourceKey.startsWith(TAGGED_PREFIX) || resourceKey.startsWith(WHOLE_KEY_PREFIX)) {
      throw new IllegalArgumentException("resource key \"" + resourceKey + "\" is in the namespace"
          + " reserved for fence keys (keys starting with \"" + TAGGED_PREFIX + "\" or \""
          + WHOLE_KEY_PREFIX + "\"); writing it could lower another resource's fence. Choose a key"
          + " outside it");
    }
    if (KeyLayout.isStoreKey(resourceKey)) {
      throw new IllegalArgumentException("resource key \"" + resourceKey + "\" has the shape of a"
          + " lease store or run ledger key ({<prefix>:<encoded name>}:lease, :fence, :last or"
          + " :ledger:...); a fenced write there could overwrite a lease or a run record, or lower"
          + " a token counter or a fence. Choose another key, e.g. with a different suffix");
    }
    int open = resourceKey.indexOf('{');
    if (open >= 0) {
      int close = resourceKey.indexOf('}', open + 1);
      if (close > open + 1) {
        return TAGGED_PREFIX + resourceKey;
      }
    }
    if (resourceKey.indexOf('}') < 0) {
      return WHOLE_KEY_PREFIX + "{" + resourceKey + "}";
    }
    throw new IllegalArgumentException("resource key \"" + resourceKey + "\" has no hash tag but"
        + " contains '}', so no fence key can share its cluster slot; give it a hash tag, e.g."
        + " \"{orders}:state\"");
  }

  private void write(String resourceKey, long token, List<String> modeAndValues) {
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token must be positive, was " + token
          + "; pass the token of your current LeaseGrant");
    }
    String fenceKey = fenceKeyOf(resourceKey);
    String[] args = new String[modeAndValues.size() + 1];
    args[0] = Long.toString(token);
    for (int i = 0; i < modeAndValues.size(); i++) {
      args[i + 1] = modeAndValues.get(i);
    }
    List<Object> reply = Scripts.FENCED_WRITE.run(commands, ScriptOutputType.MULTI,
        new String[] {resourceKey, fenceKey}, args, timeout, caller(resourceKey));
    if (reply == null || reply.size() < 2 || !(reply.get(0) instanceof Long status)) {
      throw new LeaseStoreUnavailableException("unexpected reply from Redis to a fenced write of '"
          + resourceKey + "': " + reply, null);
    }
    if (status == 0) {
      throw new FencedOutException(resourceKey, token, parse(reply.get(1)));
    }
  }

  /** For refusals: the user is the connection's, which this class does not know. */
  private static LuaScript.Caller caller(String resourceKey) {
    return new LuaScript.Caller("the Redis user of this fence's connection", "A fence writer needs"
        + " RedisAcl.fenceRules(pattern) for a pattern that matches '" + resourceKey + "'; for this"
        + " key alone: ACL SETUSER <user> " + String.join(" ", RedisAcl.fenceRules(resourceKey)),
        () -> null);
  }

  private static long parse(Object v) {
    try {
      return v instanceof String s ? Long.parseLong(s) : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  @Override
  public String toString() {
    return "RedisFence[timeout=" + timeout + "]";
  }
}
