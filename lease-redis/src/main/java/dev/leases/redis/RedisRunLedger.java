package dev.leases.redis;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Run records in Redis, beside the leases, for {@link dev.leases.once.ExactlyOnce}: a
 * <em>key-value</em> ledger ({@code T} is {@code Void}, see {@link RunLedger}). Each operation is
 * one Lua script, atomic on the primary that owns the job's slot.
 *
 * <pre>{@code
 * try (RedisLeaseStore store = RedisLeaseStore.builder("redis://127.0.0.1:6379").build()) {
 *   ExactlyOnce<Void> once = ExactlyOnce.builder(store, RedisRunLedger.on(store))
 *       .ttl(Duration.ofSeconds(30)).build();
 *   once.run("invoice-run", "2026-01-31", (none, ctx) -> sendInvoices(ctx.token()));
 * }
 * }</pre>
 *
 * <h2>Keys</h2>
 * All keys of job {@code j} share the hash tag of its lease {@code once/j} (one Redis Cluster slot,
 * next to the lease's own keys; the name is percent-encoded, so any job name is safe), see
 * {@link #keysOf}: {@code {<prefix>:once/<E(j)>}:ledger:fence} (string: the highest token that
 * began an attempt), {@code :ledger:seq} (string: the last attempt id), {@code :ledger:attempts}
 * (hash: attempt {@code id} is the fields {@code <id>:run}, {@code <id>:token}, {@code <id>:holder},
 * {@code <id>:status} ({@code STARTED|COMPLETED|FAILED}), {@code <id>:started},
 * {@code <id>:finished} (server ms), {@code <id>:failure}; values are raw strings, Redis keeps them
 * byte for byte, so nothing needs escaping) and {@code :ledger:done} (hash: run key → attempt id of
 * its completion). Run keys are hash fields, never part of a key name. Nothing expires; there is no
 * retention (delete a job's keys to forget it).
 *
 * <h2>What holds</h2>
 * <ul>
 *   <li>{@link #begin}: one script refuses ({@link FencedOutException}, nothing written) if the
 *       job's fence is above the token; otherwise raises it to the token, then answers the run's
 *       completion if it has one, else writes a STARTED attempt with the next id.
 *   <li>{@link #complete}: runs the work first, in this thread; then one script refuses
 *       ({@link FencedOutException}, nothing written) if the fence is above the attempt's token,
 *       answers another attempt's completion if the run has one (writing nothing), else writes the
 *       completion and marks the attempt COMPLETED. At most one completion per (job, run), and none
 *       under a token lower than one that has begun. Work that throws is rethrown unchanged and
 *       nothing is recorded.
 *   <li>The work is not transactional with the record. A runner that dies (or whose Redis call
 *       fails) after its work and before the completion is written leaves the effects and no
 *       completion; the next firing runs the work again. A runner fenced out has run its work too.
 *       So the work must be idempotent, or fence its own writes with {@code ctx.token()} (e.g.
 *       {@link RedisFence}); then the effect is exactly once.
 *   <li>Times ({@code started}, {@code finished}) are the Redis server's {@code TIME}, never this
 *       process's clock.
 *   <li>Every call is bounded by the command timeout (the work in {@link #complete} is not); on a
 *       timeout or connection error it throws {@link LeaseStoreUnavailableException} and whether
 *       the script ran is unknown. A key of the wrong type (written by something else) stops a
 *       script before any write: {@link IllegalStateException}.
 * </ul>
 *
 * <h2>Limits: the records are only as durable as Redis</h2>
 * <ul>
 *   <li><b>Run Redis with persistence for exactly-once</b> ({@code appendonly yes},
 *       {@code appendfsync always}; {@code everysec} may lose the last second). A non-persistent
 *       server that restarts forgets every completion: each run completed before is run again by
 *       its next firing. Its fences are forgotten too, but the lease store's tokens stay above
 *       the old ones (they are clamped to the server's clock), so no stale runner completes.
 *   <li>Replication is asynchronous: a replica promoted after a failover may lack the latest
 *       completion, and the run is run again.
 *   <li>An out-of-band delete of a job's keys (together) forgets its runs, fence and history: the
 *       next firing of any run runs it again, and until a new token begins, a runner with an older
 *       token can begin and complete. Deleting only {@code :ledger:attempts} while
 *       {@code :ledger:done} stays makes the job's completed runs fail with
 *       {@link IllegalStateException} (the ledger will not guess: it runs nothing again). Deleting
 *       only {@code :ledger:seq} is harmless (the next id is taken from the attempts).
 * </ul>
 *
 * <p>Thread-safe. Calls after {@link #close()} throw {@link LeaseStoreClosedException}.
 */
public final class RedisRunLedger implements RunLedger<Void>, AutoCloseable {

  private final RedisLeaseStore store;
  private final boolean ownsStore;
  private final AtomicBoolean closed = new AtomicBoolean();

  private RedisRunLedger(RedisLeaseStore store, boolean ownsStore) {
    this.store = store;
    this.ownsStore = ownsStore;
  }

  /**
   * A ledger on {@code store}'s connection, key prefix and command timeout: its records live in
   * that store's server, beside its leases. {@link #close()} leaves the store open.
   */
  public static RedisRunLedger on(RedisLeaseStore store) {
    return new RedisRunLedger(Objects.requireNonNull(store, "store must not be null"), false);
  }

  /**
   * A ledger that creates and owns its Lettuce client, configured as
   * {@link RedisLeaseStore#builder(String)}'s; {@link #close()} shuts it down.
   */
  public static Builder builder(String redisUri) {
    return new Builder(RedisLeaseStore.builder(redisUri));
  }

  /** Like {@link #builder(String)}. */
  public static Builder builder(RedisURI uri) {
    return new Builder(RedisLeaseStore.builder(uri));
  }

  /** A ledger on a connection from your client, which stays yours (as the store's builder). */
  public static Builder builder(RedisClient client, RedisURI uri) {
    return new Builder(RedisLeaseStore.builder(client, uri));
  }

  /** A ledger on a Redis Cluster through your client; each job's keys live in one slot. */
  public static Builder builder(RedisClusterClient client) {
    return new Builder(RedisLeaseStore.builder(client));
  }

  /** A ledger that owns the store {@code builder} builds (for the factory). */
  static RedisRunLedger build(RedisLeaseStore.Builder builder) {
    return new RedisRunLedger(builder.build(), true);
  }

  /** Builds a {@link RedisRunLedger}; nothing connects until the first call. */
  public static final class Builder {
    private final RedisLeaseStore.Builder store;

    private Builder(RedisLeaseStore.Builder store) {
      this.store = store;
    }

    /**
     * The first part of every key, as {@link RedisLeaseStore.Builder#keyPrefix}; default
     * {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}. Use the lease store's prefix, so that the
     * records sit beside the jobs' leases.
     */
    public Builder keyPrefix(String keyPrefix) {
      store.keyPrefix(keyPrefix);
      return this;
    }

    /** The bound on every call, as {@link RedisLeaseStore.Builder#commandTimeout}; default 2 s. */
    public Builder commandTimeout(Duration commandTimeout) {
      store.commandTimeout(commandTimeout);
      return this;
    }

    /** Credentials, as {@link RedisLeaseStore.Builder#user(String, String)}. */
    public Builder user(String user, String password) {
      store.user(user, password);
      return this;
    }

    /** Credentials from a file read for every new connection, as the store's builder. */
    public Builder user(String user, java.nio.file.Path passwordFile) {
      store.user(user, passwordFile);
      return this;
    }

    /** TLS for a {@code rediss://} URI, as {@link RedisLeaseStore.Builder#tls}. */
    public Builder tls(java.nio.file.Path trustCertPem, java.nio.file.Path clientCertPem,
        java.nio.file.Path clientKeyPem) {
      store.tls(trustCertPem, clientCertPem, clientKeyPem);
      return this;
    }

    /** The ledger. */
    public RedisRunLedger build() {
      return RedisRunLedger.build(store);
    }
  }

  @Override
  public Optional<RunRecord> completion(String job, String run) {
    RunKeys.check(job, run);
    List<String> k = keysOf(job);
    List<Object> reply = run(Scripts.LEDGER_COMPLETION, "reading the completion of run '" + run
        + "' of job '" + job + "'", new String[] {k.get(2), k.get(3)}, run);
    return status(reply) == 0 ? Optional.empty() : Optional.of(answer(job, run, reply));
  }

  @Override
  public RunRecord begin(String job, String run, long token, HolderId holder) {
    RunKeys.check(job, run);
    Objects.requireNonNull(holder, "holder must not be null");
    requireToken(token);
    List<String> k = keysOf(job);
    List<Object> reply = run(Scripts.LEDGER_BEGIN, "beginning run '" + run + "' of job '" + job
        + "' with token " + token, k.toArray(String[]::new), Long.toString(token), run,
        holder.value());
    if (status(reply) == 0) {
      throw new FencedOutException(RunKeys.leaseName(job), token, number(reply));
    }
    return answer(job, run, reply);
  }

  @Override
  public RunRecord complete(RunRecord attempt, Consumer<Void> work) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(work, "work must not be null");
    ensureOpen();
    work.accept(null);
    String job = attempt.job();
    List<String> k = keysOf(job);
    String what = "completing attempt " + attempt.attempt() + " of run '" + attempt.run()
        + "' of job '" + job + "' with token " + attempt.token();
    List<Object> reply = run(Scripts.LEDGER_COMPLETE, what + " (the work has run)",
        new String[] {k.get(0), k.get(2), k.get(3)}, Long.toString(attempt.token()), attempt.run(),
        Long.toString(attempt.attempt()));
    long status = status(reply);
    if (status == 0) {
      throw new FencedOutException(RunKeys.leaseName(job), attempt.token(), number(reply));
    }
    if (status == 4) {
      throw new LeaseException(what + ": the attempt is not a STARTED attempt of this run and"
          + " token in " + k.get(2) + " (it is " + text(reply) + "; was it finished or deleted"
          + " by hand?); nothing was recorded");
    }
    return answer(job, attempt.run(), reply);
  }

  @Override
  public RunRecord fail(RunRecord attempt, String failure) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(failure, "failure must not be null");
    List<String> k = keysOf(attempt.job());
    List<Object> reply = run(Scripts.LEDGER_FAIL, "recording the failure of attempt "
        + attempt.attempt() + " of job '" + attempt.job() + "'", new String[] {k.get(2)},
        Long.toString(attempt.attempt()), attempt.run(), Long.toString(attempt.token()),
        RunRecord.failureText(failure));
    if (status(reply) == 0) {
      throw new IllegalArgumentException("attempt " + attempt.attempt() + " of run '"
          + attempt.run() + "' of job '" + attempt.job() + "' with token " + attempt.token()
          + " is not in " + k.get(2) + "; pass a record that begin() of this ledger returned");
    }
    return decode(attempt.job(), reply.get(1));
  }

  @Override
  public List<RunRecord> history(String job, int limit) {
    RunKeys.checkJob(job);
    RunKeys.checkLimit(limit);
    List<String> k = keysOf(job);
    List<Object> reply = run(Scripts.LEDGER_HISTORY, "reading the history of job '" + job + "'",
        new String[] {k.get(1), k.get(2)}, Integer.toString(limit));
    List<RunRecord> out = new ArrayList<>(reply.size());
    for (Object r : reply) {
      out.add(decode(job, r));
    }
    return List.copyOf(out);
  }

  /**
   * The keys of {@code job}'s records, for operators and tests: fence, seq, attempts, done, all
   * under the hash tag of the job's lease {@code once/<job>}.
   */
  public List<String> keysOf(String job) {
    return store.layout().ledgerKeys(job);
  }

  /** The bound on every call. */
  public Duration commandTimeout() {
    return store.commandTimeout();
  }

  /** Closes the client this ledger owns, if any; a store passed to {@link #on} stays open. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true) && ownsStore) {
      store.close();
    }
  }

  @Override
  public String toString() {
    return "RedisRunLedger[" + store + "]";
  }

  // --- internals -------------------------------------------------------------------------------

  private List<Object> run(LuaScript script, String what, String[] keys, String... args) {
    ensureOpen();
    try {
      List<Object> reply = store.run(script, ScriptOutputType.MULTI, keys, args);
      if (reply == null) {
        throw new LeaseStoreUnavailableException(what + ": Redis answered nil to script '"
            + script.name() + "'", null);
      }
      return reply;
    } catch (LeaseStoreUnavailableException e) {
      throw new LeaseStoreUnavailableException(what + ": " + e.getMessage(), e);
    }
  }

  /** The record of a {1|2, record} reply; {3, id} (a completion without its attempt) throws. */
  private RunRecord answer(String job, String run, List<Object> reply) {
    if (status(reply) == 3) {
      throw new IllegalStateException("run '" + run + "' of job '" + job + "' is recorded as"
          + " completed by attempt " + text(reply) + " in " + keysOf(job).get(3) + ", but that"
          + " attempt's fields are gone from " + keysOf(job).get(2) + " (deleted out of band?)."
          + " The run is not run again; to forget the job, delete all of " + keysOf(job));
    }
    return decode(job, reply.get(1));
  }

  private RunRecord decode(String job, Object raw) {
    if (!(raw instanceof List<?> f) || f.size() < 8) {
      throw new LeaseStoreUnavailableException("unexpected run record from Redis for job '" + job
          + "': " + raw, null);
    }
    try {
      String finished = (String) f.get(6);
      return new RunRecord(job, (String) f.get(1), Long.parseLong((String) f.get(0)),
          Long.parseLong((String) f.get(2)), new HolderId((String) f.get(3)),
          Instant.ofEpochMilli(Long.parseLong((String) f.get(5))),
          finished == null ? null : Instant.ofEpochMilli(Long.parseLong(finished)),
          RunRecord.Status.valueOf((String) f.get(4)), (String) f.get(7));
    } catch (RuntimeException e) {
      throw new IllegalStateException("run record " + f + " of job '" + job + "' in "
          + keysOf(job).get(2) + " is malformed (changed outside this library?); fix or delete"
          + " its fields", e);
    }
  }

  private static long status(List<Object> reply) {
    if (reply.isEmpty() || !(reply.get(0) instanceof Long n)) {
      throw new LeaseStoreUnavailableException("unexpected reply from a Redis ledger script: "
          + reply, null);
    }
    return n;
  }

  private static String text(List<Object> reply) {
    return reply.size() > 1 ? String.valueOf(reply.get(1)) : "?";
  }

  private static long number(List<Object> reply) {
    try {
      return Long.parseLong(text(reply));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static void requireToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token must be positive, was " + token
          + "; pass the token of your current LeaseGrant");
    }
  }


  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this RedisRunLedger is closed; build a new one");
    }
  }
}
