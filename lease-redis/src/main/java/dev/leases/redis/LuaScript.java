package dev.leases.redis;

import dev.leases.LeaseStoreUnavailableException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A Lua script run with {@code EVALSHA}; when the server answers {@code NOSCRIPT} (restart,
 * {@code SCRIPT FLUSH}, failover to a replica that never saw it) it is sent once with {@code EVAL},
 * which also puts it back in the server's cache. Every call is bounded by a deadline.
 */
final class LuaScript {

  /** The code of the error reply a script returns when a key it needs holds the wrong type. */
  static final String FOREIGN_KEY = "LEASES_FOREIGN_KEY";
  /** The code of the error reply a script returns when the caller's ACL forbids a write. */
  static final String DENIED = "LEASES_NOPERM";

  /**
   * Who runs a script, for messages: {@code user} names the Redis user (e.g. {@code "Redis user
   * 'app'"}), {@code grant} says what to grant when its ACL refuses, and {@code closedError}
   * returns the exception to throw instead when the caller was closed meanwhile, or null.
   */
  record Caller(String user, String grant, Supplier<@Nullable RuntimeException> closedError) {}

  private final String name;
  private final String body;
  private final String sha;

  LuaScript(String name, String body) {
    this.name = name;
    this.body = body;
    this.sha = sha1Hex(body);
  }

  String name() {
    return name;
  }

  /**
   * Runs the script and returns its reply, or throws {@link LeaseStoreUnavailableException} when no
   * reply arrived within {@code timeout} (the script may still run) or the server answered an
   * error, and {@link RedisAccessDeniedException} when the caller's ACL refused it.
   */
  <T> T run(RedisScriptingAsyncCommands<String, String> commands, ScriptOutputType type,
      String[] keys, String[] args, Duration timeout, Caller caller) {
    return this.<T>runAll(commands, type, 1, i -> keys, i -> args, timeout, caller).get(0);
  }

  /**
   * Runs the script {@code n} times, call {@code i} with KEYS {@code keysOf(i)} and ARGV
   * {@code argsOf(i)}, pipelined: every call is sent before any reply is awaited, so the whole list
   * costs one round trip to each server involved (two if the server has lost its script cache: the
   * calls it answered {@code NOSCRIPT} are sent again, pipelined, with {@code EVAL}). Each call's
   * keys and arguments are built just before it is sent, so that the server runs the first while
   * the next is built. One deadline, {@code timeout} from now, bounds every wait of the list, the
   * resend included. If any call fails or has no reply by then, the others are abandoned and the
   * whole list's outcome is unknown: calls that were sent may have run.
   *
   * @return the replies, in call order
   */
  <T> List<T> runAll(RedisScriptingAsyncCommands<String, String> commands, ScriptOutputType type,
      int n, IntFunction<String[]> keysOf, IntFunction<String[]> argsOf, Duration timeout,
      Caller caller) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String[][] keys = new String[n][];
    String[][] args = new String[n][];
    List<T> replies = new ArrayList<>(Collections.nCopies(n, null));
    List<Integer> lost = awaitAll(i -> {
      keys[i] = keysOf.apply(i);
      args[i] = argsOf.apply(i);
      return commands.evalsha(sha, type, keys[i], args[i]);
    }, range(n), replies, deadline, timeout, caller);
    if (!lost.isEmpty()) {
      // The server lost its script cache: EVAL sends the body and caches it again.
      List<Integer> again = awaitAll(i -> commands.eval(body, type, keys[i], args[i]),
          lost, replies, deadline, timeout, caller);
      if (!again.isEmpty()) {
        throw new LeaseStoreUnavailableException(
            "Redis answered NOSCRIPT to EVAL of script '" + name + "'", null);
      }
    }
    return replies;
  }

  private static List<Integer> range(int n) {
    List<Integer> all = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      all.add(i);
    }
    return all;
  }

  /**
   * Sends {@code call(i)} for every index, then awaits each reply into {@code replies}; returns the
   * indexes the server answered {@code NOSCRIPT}. On any other failure, cancels what is pending and
   * throws.
   */
  private <T> List<Integer> awaitAll(IntFunction<RedisFuture<T>> call, List<Integer> indexes,
      List<T> replies, long deadline, Duration timeout, Caller caller) {
    List<RedisFuture<T>> futures = new ArrayList<>(indexes.size());
    List<Integer> noScript = new ArrayList<>();
    boolean done = false;
    try {
      for (int i : indexes) {
        try {
          futures.add(call.apply(i));
        } catch (RuntimeException e) {
          throw failure(e, caller);
        }
      }
      for (int k = 0; k < futures.size(); k++) {
        try {
          replies.set(indexes.get(k), await(futures.get(k), deadline, timeout, caller));
        } catch (NoScriptSignal e) {
          noScript.add(indexes.get(k));
        }
      }
      done = true;
      return noScript;
    } finally {
      if (!done) {
        futures.forEach(f -> f.cancel(false));
      }
    }
  }

  private <T> T await(RedisFuture<T> future, long deadline, Duration timeout, Caller caller) {
    try {
      long left = Math.max(0, deadline - System.nanoTime());
      return future.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new LeaseStoreUnavailableException("Redis did not answer script '" + name + "' within "
          + timeout + "; its outcome is unknown (raise the command timeout if the server is"
          + " merely slow)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while waiting for Redis to answer"
          + " script '" + name + "'; its outcome is unknown", e);
    } catch (CancellationException e) {
      throw failure(e, caller);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof RedisNoScriptException) {
        throw new NoScriptSignal(cause);
      }
      if (cause instanceof RedisCommandExecutionException && isForeignKey(cause.getMessage())) {
        throw foreignKey(cause.getMessage(), cause);
      }
      throw failure(cause, caller);
    }
  }

  private RuntimeException failure(Throwable cause, Caller caller) {
    RuntimeException closed = caller.closedError().get();
    if (closed != null) {
      return closed;
    }
    RuntimeException denied = Refusals.denied(cause, caller.user(), caller.grant(), name);
    if (denied != null) {
      return denied;
    }
    return new LeaseStoreUnavailableException("Redis call for script '" + name + "' failed: "
        + cause + "; its outcome is unknown", cause);
  }

  /** Whether {@code text} is the error text of a script's guard ({@code Scripts.GUARD}). */
  static boolean isForeignKey(@Nullable Object text) {
    return text instanceof String s && s.startsWith(FOREIGN_KEY + " ");
  }

  /**
   * A script's guard found a key of the wrong type and stopped before changing anything.
   *
   * @param message the guard's error text
   */
  IllegalStateException foreignKey(String message, @Nullable Throwable cause) {
    String[] parts = message.split(" ", 4); // code, type, wanted type, key
    return new IllegalStateException("Redis key '" + parts[3] + "' holds a " + parts[1]
        + " where script '" + name + "' needs a " + parts[2] + " or no key; it stopped before"
        + " changing anything (no token or fence moved). Something else wrote that key: use a key"
        + " of the right type, or delete this one if its data is not needed", cause);
  }

  static String sha1Hex(String body) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-1");
      return HexFormat.of().formatHex(md.digest(body.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-1, which Redis script caching needs", e);
    }
  }

  /** Internal: the server does not have the script cached. */
  private static final class NoScriptSignal extends RuntimeException {
    NoScriptSignal(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }
  }
}
