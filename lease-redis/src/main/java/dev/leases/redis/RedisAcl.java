package dev.leases.redis;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Redis 7 ACL rules of this module's users, as {@code ACL SETUSER} rules or applied through an
 * administrator's connection. Every key {@link RedisLeaseStore} and {@link RedisRunLedger} keep
 * for prefix {@code p} starts with <code>{p:</code> (the hash tag, see
 * {@link RedisLeaseStore#keysOf}), and releases are announced on the channel {@code p:released},
 * so one key pattern and one channel cover them. Redis checks every command a script runs against
 * the caller's ACL, keys included, so the rules list the commands the scripts run:
 *
 * <ul>
 *   <li>{@link Access#HOLDER}: <code>~{p:*</code>, {@code &p:released}, {@code EVALSHA} and
 *       {@code EVAL} (the fallback when the server lost its script cache), the reads
 *       {@code TYPE GET HGET HMGET PTTL TIME EXISTS HEXISTS HKEYS}, the writes
 *       {@code INCR SET HSET PEXPIREAT DEL HDEL PUBLISH}, {@code SUBSCRIBE UNSUBSCRIBE} for
 *       {@code onRelease}, and {@code SCAN} for {@code names} — acquire, renew, release, inspect,
 *       token, listing, {@code onRelease} and the run ledger.
 *   <li>{@link Access#OBSERVER}: the same keys, channel and reads, no write command —
 *       {@code inspect}, {@code token}, {@code names}, {@code onRelease} and reading run records
 *       work; every
 *       write throws {@link RedisAccessDeniedException} (the writing scripts check the caller's
 *       permissions first, so a refusal by ACL never looks like "held by another"). An observer can
 *       run its own Lua with {@code EVAL}, but only with these read commands, on these keys.
 * </ul>
 *
 * A {@link RedisFence} writer needs, besides, {@link #fenceRules} for the guarded resource keys,
 * which lie outside the prefix, and their fence keys ({@code leases:fence:...}). Prefixes nest: a
 * user of prefix {@code a} also reaches the keys of prefix {@code a:b} (as the pattern
 * <code>{a:*</code> matches <code>{a:b:...</code>); give unrelated applications prefixes that do
 * not start with one another followed by {@code :}.
 *
 * <p><b>{@code SCAN} is not confined to the key pattern</b>: Redis (7.0 at least) checks only
 * that the user may run it, and its answer holds every key name of the database (not the values),
 * other applications' included. Where those names are secret, keep the leases in a database or
 * server of their own, or append {@code -scan} to the rules (listing is then refused, and nothing
 * else).
 *
 * <p>The rules start with {@code resetkeys resetchannels -@all}, so applying them again gives the
 * same user; they leave its passwords and its on/off state alone. A new user cannot log in until
 * the administrator adds a password and enables it: {@code ACL SETUSER myapp on >password}. In a
 * Redis Cluster, ACLs are per node: apply them on every node (a cluster client's topology refresh
 * needs more commands, which these rules do not grant).
 */
public final class RedisAcl {

  /** What a user may do with the keys of one prefix. */
  public enum Access {
    /** What a lease holder and a run ledger need. */
    HOLDER,
    /** Reads only: dashboards and operators. */
    OBSERVER
  }

  /** The read commands the scripts run. */
  static final List<String> READS =
      List.of("type", "get", "hget", "hmget", "pttl", "time", "exists", "hexists", "hkeys");
  /** The write commands the store's and the run ledger's scripts run. */
  static final List<String> WRITES =
      List.of("incr", "set", "hset", "pexpireat", "del", "hdel", "publish");

  /** The command {@link RedisLeaseStore#names} runs, outside any script. */
  static final String LISTING = "scan";

  private static final int MAX_NAME_LENGTH = 128;

  private RedisAcl() {}

  /**
   * The rules of {@code access} on {@code keyPrefix}, e.g. for prefix {@code myapp:leases} and
   * {@link Access#OBSERVER}: <code>resetkeys resetchannels -@all ~&#123;myapp:leases:*
   * &amp;myapp:leases:released +evalsha +eval +type +get +hget +hmget +pttl +time +exists +hexists
   * +hkeys +scan +subscribe +unsubscribe</code>.
   */
  public static List<String> rules(String keyPrefix, Access access) {
    String prefix = KeyLayout.requirePrefix(keyPrefix);
    Objects.requireNonNull(access, "access must not be null");
    List<String> rules = new ArrayList<>(List.of("resetkeys", "resetchannels", "-@all",
        "~{" + prefix + ":*", "&" + new KeyLayout(prefix).releaseChannel(), "+evalsha", "+eval"));
    READS.forEach(c -> rules.add("+" + c));
    rules.add("+" + LISTING);
    if (access == Access.HOLDER) {
      WRITES.forEach(c -> rules.add("+" + c));
    }
    rules.add("+subscribe");
    rules.add("+unsubscribe");
    return List.copyOf(rules);
  }

  /**
   * What a {@link RedisFence} writer needs on top of its other rules, for the resource keys that
   * match the glob {@code resourcePattern} (e.g. <code>{orders}:*</code>): those keys, their fence
   * keys ({@link RedisFence#fenceKeyOf}), and the commands of the fenced write and read
   * ({@code EVALSHA EVAL TYPE GET SET HSET}). Add these rules after {@link #rules} (which reset
   * the keys), or alone for a user that only writes through a fence.
   *
   * @param resourcePattern a Redis glob without spaces, e.g. <code>{orders}:*</code> or
   *     {@code orders:*}
   */
  public static List<String> fenceRules(String resourcePattern) {
    String p = requireToken("resource pattern", resourcePattern);
    return List.of("~" + p, "~" + RedisFence.TAGGED_PREFIX + p,
        "~" + RedisFence.WHOLE_KEY_PREFIX + "{" + p + "}", "+evalsha", "+eval", "+type", "+get",
        "+set", "+hset");
  }

  /**
   * The command, as typed at the {@code redis-cli} prompt (in a shell, quote each rule), that gives
   * {@code user} the {@code access} rules on {@code keyPrefix}, e.g.
   * <code>ACL SETUSER myapp resetkeys resetchannels -@all ~&#123;myapp:leases:* ...</code>.
   */
  public static String setUserCommand(String user, String keyPrefix, Access access) {
    return "ACL SETUSER " + requireName(user) + " " + String.join(" ", rules(keyPrefix, access));
  }

  /**
   * Gives {@code user} (created if it does not exist, then unable to log in until it has a
   * password and is on) the {@code access} rules on {@code keyPrefix}, through {@code admin} (a
   * connection of a user allowed to run {@code ACL SETUSER}); idempotent. Bounded by
   * {@code timeout}. In a cluster, run it on every node.
   *
   * @throws RedisAccessDeniedException if {@code admin} may not run {@code ACL SETUSER}
   * @throws LeaseStoreUnavailableException if Redis did not answer in time
   */
  public static void apply(StatefulRedisConnection<String, String> admin, String user,
      String keyPrefix, Access access, Duration timeout) {
    setUser(admin, user, rules(keyPrefix, access), timeout);
  }

  /**
   * Adds {@code rules} (e.g. {@link #fenceRules}) to {@code user} with {@code ACL SETUSER}, through
   * {@code admin}; bounded by {@code timeout}.
   */
  public static void setUser(StatefulRedisConnection<String, String> admin, String user,
      List<String> rules, Duration timeout) {
    Objects.requireNonNull(admin, "admin must not be null");
    String u = requireName(user);
    LeaseArguments.requirePositive("timeout", timeout);
    CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8).add("SETUSER").add(u);
    for (String rule : Objects.requireNonNull(rules, "rules must not be null")) {
      if (rule.startsWith(">") || rule.startsWith("#") || rule.equals("nopass")) {
        throw new IllegalArgumentException("setUser sets permissions, not passwords; add the"
            + " password with ACL SETUSER " + u + " on >...");
      }
      args.add(requireToken("rule", rule));
    }
    var future = admin.async().dispatch(CommandType.ACL, new StatusOutput<>(StringCodec.UTF8), args);
    String what = "ACL SETUSER " + u;
    try {
      future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(false);
      throw new LeaseStoreUnavailableException("Redis did not answer " + what + " within "
          + timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while waiting for " + what, e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      RuntimeException denied = Refusals.denied(cause, "the administrator's connection",
          "It needs +acl|setuser (e.g. the default user) to run ACL SETUSER", null);
      if (denied != null) {
        throw denied;
      }
      throw new LeaseStoreUnavailableException(what + " failed: " + cause.getMessage(), cause);
    }
  }

  /** A user name: {@code A-Z a-z 0-9 . _ - : @}, so that it needs no quoting. */
  static String requireName(String name) {
    LeaseArguments.requireText("user name", name, MAX_NAME_LENGTH);
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
          || ".-_:@".indexOf(c) >= 0)) {
        throw new IllegalArgumentException("user name '" + name + "' has '" + c + "'; use"
            + " A-Z a-z 0-9 . _ - : @ (e.g. \"myapp\")");
      }
    }
    return name;
  }

  private static String requireToken(String what, String value) {
    LeaseArguments.requireText(what, value, 1024);
    if (value.chars().anyMatch(c -> c <= ' ')) {
      throw new IllegalArgumentException(what + " '" + value + "' must not contain spaces or"
          + " control characters");
    }
    return value;
  }
}
