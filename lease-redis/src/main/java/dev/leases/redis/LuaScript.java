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
import java.util.HexFormat;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A Lua script run with {@code EVALSHA}; when the server answers {@code NOSCRIPT} (restart,
 * {@code SCRIPT FLUSH}, failover to a replica that never saw it) it is sent once with {@code EVAL},
 * which also puts it back in the server's cache. Every call is bounded by a deadline.
 */
final class LuaScript {

  /** The code of the error reply a script returns when a key it needs holds the wrong type. */
  static final String FOREIGN_KEY = "LEASES_FOREIGN_KEY";

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
   * reply arrived within {@code timeout} (the script may still run) or the server answered an error.
   *
   * @param closedError returns the exception to throw instead when the caller was closed meanwhile,
   *     or null
   */
  <T> T run(RedisScriptingAsyncCommands<String, String> commands, ScriptOutputType type,
      String[] keys, String[] args, Duration timeout, Supplier<RuntimeException> closedError) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      return await(() -> commands.evalsha(sha, type, keys, args), deadline, timeout, closedError);
    } catch (NoScriptSignal e) {
      // The server lost its script cache: EVAL sends the body and caches it again.
      try {
        return await(() -> commands.eval(body, type, keys, args), deadline, timeout, closedError);
      } catch (NoScriptSignal impossible) {
        throw new LeaseStoreUnavailableException(
            "Redis answered NOSCRIPT to EVAL of script '" + name + "'", impossible.getCause());
      }
    }
  }

  private <T> T await(Supplier<RedisFuture<T>> call, long deadline, Duration timeout,
      Supplier<RuntimeException> closedError) {
    final RedisFuture<T> future;
    try {
      future = call.get();
    } catch (RuntimeException e) {
      throw failure(e, closedError);
    }
    try {
      long left = Math.max(0, deadline - System.nanoTime());
      return future.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(false);
      throw new LeaseStoreUnavailableException("Redis did not answer script '" + name + "' within "
          + timeout + "; its outcome is unknown (raise the command timeout if the server is"
          + " merely slow)", e);
    } catch (InterruptedException e) {
      future.cancel(false);
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while waiting for Redis to answer"
          + " script '" + name + "'; its outcome is unknown", e);
    } catch (CancellationException e) {
      throw failure(e, closedError);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof RedisNoScriptException) {
        throw new NoScriptSignal(cause);
      }
      if (cause instanceof RedisCommandExecutionException
          && cause.getMessage() != null && cause.getMessage().startsWith(FOREIGN_KEY + " ")) {
        throw foreignKey(cause);
      }
      throw failure(cause, closedError);
    }
  }

  private RuntimeException failure(Throwable cause, Supplier<RuntimeException> closedError) {
    RuntimeException closed = closedError.get();
    if (closed != null) {
      return closed;
    }
    return new LeaseStoreUnavailableException("Redis call for script '" + name + "' failed: "
        + cause + "; its outcome is unknown", cause);
  }

  /** A script's guard found a key of the wrong type and stopped before changing anything. */
  private IllegalStateException foreignKey(Throwable cause) {
    String[] parts = cause.getMessage().split(" ", 4); // code, type, wanted type, key
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
