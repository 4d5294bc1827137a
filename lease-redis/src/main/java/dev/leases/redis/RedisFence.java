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
 * kept beside the resource in {@link #fenceKeyOf(String) its fence key}, which never expires.
 *
 * <p>{@code >=}, not {@code >}: one leader may write many times under one token. A lower token
 * changes nothing and throws {@link FencedOutException} carrying the highest token: the writer was
 * superseded while it was not looking and must stop — not log and carry on.
 *
 * <p>The fence protects only writes that go through it: a plain {@code SET} of the resource key
 * bypasses it, and deleting the fence key resets it. Tokens must be positive (as every
 * {@link dev.leases.LeaseGrant} token is); they are compared exactly, as decimal strings.
 *
 * <p>The connection stays yours; this class never closes it. Thread-safe.
 */
public final class RedisFence {

  private static final String SUFFIX = ":fence";

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
    Objects.requireNonNull(value, "value must not be null");
    write(resourceKey, token, List.of("set", value));
  }

  /**
   * {@code HSET resourceKey field value ...} if {@code token} is at least the highest accepted.
   *
   * @throws FencedOutException when a higher token has written; nothing changed
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
      args.add(Objects.requireNonNull(f, "field names must not be null"));
      args.add(Objects.requireNonNull(v, () -> "value of field '" + f + "' must not be null"));
    });
    write(resourceKey, token, args);
  }

  /** The highest token {@code resourceKey} has accepted, empty if none. */
  public OptionalLong highestToken(String resourceKey) {
    String fenceKey = fenceKeyOf(resourceKey);
    List<Object> reply = Scripts.FENCED_READ.run(commands, ScriptOutputType.MULTI,
        new String[] {fenceKey}, new String[0], timeout, () -> null);
    Object v = reply == null || reply.isEmpty() ? null : reply.get(0);
    return v instanceof String s ? OptionalLong.of(Long.parseLong(s)) : OptionalLong.empty();
  }

  /**
   * The key that holds {@code resourceKey}'s highest accepted token, in the same Redis Cluster
   * slot: {@code resourceKey + ":fence"} when the key has a hash tag ({@code {orders}:state} →
   * {@code {orders}:state:fence}); otherwise the whole key becomes the tag
   * ({@code orders:state} → {@code {orders:state}:fence}), which hashes exactly as the key does.
   *
   * @throws IllegalArgumentException for a key with no hash tag that contains {@code '}'}: give it a
   *     hash tag
   */
  public static String fenceKeyOf(String resourceKey) {
    Objects.requireNonNull(resourceKey, "resourceKey must not be null");
    if (resourceKey.isEmpty()) {
      throw new IllegalArgumentException("resourceKey must not be empty");
    }
    int open = resourceKey.indexOf('{');
    if (open >= 0) {
      int close = resourceKey.indexOf('}', open + 1);
      if (close > open + 1) {
        return resourceKey + SUFFIX;
      }
    }
    if (resourceKey.indexOf('}') < 0) {
      return "{" + resourceKey + "}" + SUFFIX;
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
        new String[] {resourceKey, fenceKey}, args, timeout, () -> null);
    if (reply == null || reply.size() < 2 || !(reply.get(0) instanceof Long status)) {
      throw new LeaseStoreUnavailableException("unexpected reply from Redis to a fenced write of '"
          + resourceKey + "': " + reply, null);
    }
    if (status == 0) {
      throw new FencedOutException(resourceKey, token, parse(reply.get(1)));
    }
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
