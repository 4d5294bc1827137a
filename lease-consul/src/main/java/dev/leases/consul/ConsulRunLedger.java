package dev.leases.consul;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.model.kv.ImmutableOperation;
import org.kiwiproject.consul.model.kv.Operation;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.model.kv.Verb;

/**
 * Run records in Consul KV, next to the leases of a {@link ConsulLeaseStore}, for
 * {@link dev.leases.once.ExactlyOnce}: a key-value ledger ({@code T} is {@code Void}, see
 * {@link RunLedger}). The completion of a (job, run) is written at most once, and only while the
 * job's fence is at most the attempt's token; the work runs before that write and is not undone.
 *
 * <pre>{@code
 * try (ConsulLeaseStore store = ConsulLeaseStore.builder("http://127.0.0.1:8500").build();
 *     ConsulRunLedger ledger = ConsulRunLedger.builder("http://127.0.0.1:8500").build();
 *     ExactlyOnce<Void> once = ExactlyOnce.builder(store, ledger).ttl(Duration.ofSeconds(15))
 *         .build()) {
 *   once.run("invoice-run", "2026-01-31", (none, ctx) -> sendInvoices(ctx.token()));
 * }
 * }</pre>
 *
 * <h2>Keys</h2>
 * Under the lease store's key prefix (use the same {@link Builder#keyPrefix} as your stores), in
 * the reserved folder {@code <prefix>/.once/<E(job)>/} ({@code E} is the lease keys' escaping, see
 * {@code KeyLayout}: injective, no {@code /} or {@code .}, so no lease key and no other job's key
 * can equal one of these, and {@link ConsulFence} refuses them as resources):
 * <ul>
 *   <li>{@code fence}: {@code {"token":N}}, the highest token that began an attempt of the job;
 *   <li>{@code attempt}: {@code {"last":N}}, the last attempt id handed out (ids are 1, 2, 3...);
 *   <li>{@code attempts/<id, 19 digits>}: one attempt's record (below);
 *   <li>{@code done/<E(run)>}: the completed attempt's record, written once per (job, run).
 * </ul>
 * A record is a JSON object (Jackson): {@code {"job", "run", "attempt", "token", "holder",
 * "status" (STARTED, COMPLETED or FAILED), "started", "finished", "failure"}}, times as ISO-8601
 * instants, {@code finished} and {@code failure} null until set.
 *
 * <h2>Each operation is one Consul transaction</h2>
 * Each operation reads the keys it needs, then sends one {@code /v1/txn} whose guards are the
 * indexes just read ({@code cas} at the {@code ModifyIndex} read, or at 0 for a key that must not
 * exist yet; {@code check-index}; {@code check-not-exists}). Consul applies all of it or nothing;
 * if any key changed in between, the transaction is rolled back, nothing is written, and the
 * operation reads again and retries, with a short random back-off, within its call timeout.
 * <ul>
 *   <li>{@link #begin}: if the fence read is above the token, {@link FencedOutException} (no
 *       write: the fence only grows). Otherwise one transaction raises the fence to the token
 *       ({@code cas}; {@code check-index} if already equal) and either confirms the completion read
 *       ({@code check-index} of {@code done/<run>}) and returns it, or, with
 *       {@code check-not-exists} of {@code done/<run>}, advances the counter ({@code cas}) and
 *       creates the STARTED record ({@code cas} 0).
 *   <li>{@link #complete}: runs the work on the caller's thread, unbounded; then, if the fence read
 *       is above the attempt's token, {@link FencedOutException} and nothing is marked; if the run
 *       has a completion, that record is returned and nothing is written; otherwise one
 *       transaction checks the fence ({@code check-index}, or raises it to the token if it is
 *       lower, which only an out-of-band delete makes possible), creates {@code done/<run>}
 *       ({@code cas} 0) and marks the attempt COMPLETED ({@code cas} at its index). A begin of a
 *       higher token between the read and the transaction changes the fence's index, so the
 *       completion rolls back and the retry reads the higher fence: no attempt completes once a
 *       higher token has begun.
 *   <li>{@link #fail}: one {@code cas} of the attempt's record, if still STARTED; not fenced.
 *   <li>{@link #completion} and {@link #history}: reads ({@code history} reads the job's attempt
 *       records in one recursive read, so its cost grows with the job's attempts).
 * </ul>
 * Answers given from a read alone (fenced out; already completed) rest on facts that only grow:
 * the fence and the completions.
 *
 * <h2>What holds, and what does not</h2>
 * <ul>
 *   <li>At most one attempt of a (job, run) completes; an attempt whose token has been superseded
 *       by a begin under a higher token cannot complete.
 *   <li>The work is not transactional with the record. A runner that dies mid-run leaves its effects
 *       and a STARTED record, and the next firing (after the lease's expiry) runs the work again; a
 *       runner whose completion is fenced out has run its work too. Work must therefore be
 *       idempotent, or fence its own writes with the token (e.g. {@link ConsulFence}); then its
 *       effect is exactly once.
 *   <li>Times are this client's wall clock ({@code Instant.now()}): Consul KV exposes no clock.
 *       {@code finished} is never before {@code started} (clamped), even when clients' clocks
 *       disagree.
 *   <li>The records are Raft data: they survive agent and server restarts with the servers' data
 *       directories. A {@code -dev} agent keeps them in memory and forgets them on restart, and so
 *       forgets completions: run real servers for exactly-once.
 *   <li>An out-of-band delete (e.g. {@code consul kv delete -recurse <prefix>/.once/}) forgets the
 *       job's fence, completions and history: the next firing runs the work again, and a runner
 *       paused since before the delete can complete under its old token until a newer token
 *       begins. An attempt whose record was deleted cannot be completed or failed (its id may be
 *       handed out again; its completion is refused with {@link LeaseException}). Do not delete
 *       these keys.
 *   <li>Every call of the ledger's own is bounded by {@link Builder#callTimeout} (all its requests
 *       and retries together) and fails with {@link LeaseStoreUnavailableException} after it, or on
 *       an I/O error or an error answer; a transaction already sent may still land. The work in
 *       {@link #complete} is not bounded.
 * </ul>
 *
 * <p>Thread-safe. A ledger built from a URL owns its client and destroys it on {@link #close()};
 * one built on your client leaves it open. Calls after {@code close()} throw
 * {@link LeaseStoreClosedException}.
 */
public final class ConsulRunLedger implements RunLedger<Void>, AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String FENCE = "fence";
  private static final String COUNTER = "attempt";
  private static final String ATTEMPTS = "attempts/";
  private static final String DONE = "done/";
  private static final long MAX_BACKOFF_MS = 20;

  private final Consul consul;
  private final boolean ownsClient;
  private final KeyValueClient kv;
  private final KeyLayout keys;
  private final ConsulCalls calls;
  private final AtomicBoolean closed = new AtomicBoolean();

  private ConsulRunLedger(Builder b, Consul consul, boolean ownsClient) {
    this.consul = consul;
    this.ownsClient = ownsClient;
    this.kv = consul.keyValueClient();
    this.keys = new KeyLayout(b.options.keyPrefix);
    this.calls = b.options.calls();
  }

  /**
   * A ledger that creates and owns its Consul client (as {@link ConsulLeaseStore#builder(String)}
   * does) and destroys it on {@link #close()}.
   *
   * @param url the agent's HTTP address, e.g. {@code http://127.0.0.1:8500}
   */
  public static Builder builder(String url) {
    return new Builder(ClientOptions.forUrl(url));
  }

  /**
   * A ledger on your client, which stays yours. Each call is still bounded by
   * {@link Builder#callTimeout}, but an abandoned HTTP request goes on until your client's own read
   * timeout (no further request starts).
   */
  public static Builder builder(Consul client) {
    return new Builder(ClientOptions.forClient(client));
  }

  /** The folder of {@code job}'s records: {@code <prefix>/.once/<E(job)>/}. */
  public String folderOf(String job) {
    return keys.ledgerFolderOf(RunKeys.checkJob(job));
  }

  @Override
  public Optional<RunRecord> completion(String job, String run) {
    RunKeys.check(job, run);
    ensureOpen();
    String folder = keys.ledgerFolderOf(job);
    return calls.run("completion of run '" + run + "' of job '" + job + "'",
        () -> kv.getValue(doneKey(folder, run)).map(v -> completed(v, job, run)));
  }

  @Override
  public RunRecord begin(String job, String run, long token, HolderId holder) {
    RunKeys.check(job, run);
    requireToken(token);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    String what = "beginning run '" + run + "' of job '" + job + "' with token " + token;
    String folder = keys.ledgerFolderOf(job);
    String doneKey = doneKey(folder, run);
    return retried(what, () -> {
      Optional<Value> fence = kv.getValue(folder + FENCE);
      long highest = fenceOf(fence);
      if (highest > token) {
        throw new FencedOutException(RunKeys.leaseName(job), token, highest);
      }
      Operation raise = highest == token ? checkIndex(fence.get())
          : cas(folder + FENCE, fence, JSON.createObjectNode().put("token", token));
      Optional<Value> done = kv.getValue(doneKey);
      if (done.isPresent()) {
        RunRecord completed = completed(done.get(), job, run);
        return ConsulTxn.perform(kv, raise, checkIndex(done.get())).map(r -> completed);
      }
      Optional<Value> counter = kv.getValue(folder + COUNTER);
      long id = (counter.isPresent() ? counterOf(counter.get()) : highestAttemptId(folder)) + 1;
      RunRecord started = new RunRecord(job, run, id, token, holder, Instant.now(), null,
          RunRecord.Status.STARTED, null);
      return ConsulTxn.perform(kv, raise, checkNotExists(doneKey),
          cas(folder + COUNTER, counter, JSON.createObjectNode().put("last", id)),
          cas(attemptKey(folder, id), Optional.empty(), json(started))).map(r -> started);
    });
  }

  @Override
  public RunRecord complete(RunRecord attempt, Consumer<Void> work) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(work, "work must not be null");
    ensureOpen();
    work.accept(null);
    ensureOpen();
    String job = attempt.job();
    String run = attempt.run();
    String what = "completing attempt " + attempt.attempt() + " of run '" + run + "' of job '"
        + job + "' with token " + attempt.token();
    String folder = keys.ledgerFolderOf(job);
    String doneKey = doneKey(folder, run);
    String attemptKey = attemptKey(folder, attempt.attempt());
    return retried(what, () -> {
      Optional<Value> fence = kv.getValue(folder + FENCE);
      long highest = fenceOf(fence);
      if (highest > attempt.token()) {
        throw new FencedOutException(RunKeys.leaseName(job), attempt.token(), highest);
      }
      Optional<Value> done = kv.getValue(doneKey);
      if (done.isPresent()) {
        return Optional.of(completed(done.get(), job, run));
      }
      Value stored = kv.getValue(attemptKey).orElseThrow(() -> new LeaseException(what + ": the"
          + " attempt's record " + attemptKey + " is gone (deleted out of band?); nothing was"
          + " recorded, and the run stays incomplete"));
      RunRecord current = sameAttempt(stored, attempt, what);
      if (current.status() != RunRecord.Status.STARTED) {
        throw new LeaseException(what + ": the attempt is already " + current.status()
            + " in " + attemptKey + " (was it finished by another client, or by hand?); nothing"
            + " was recorded");
      }
      Operation guard = highest == attempt.token() ? checkIndex(fence.get())
          : cas(folder + FENCE, fence, JSON.createObjectNode().put("token", attempt.token()));
      RunRecord completed = finished(current, RunRecord.Status.COMPLETED, null);
      ObjectNode body = json(completed);
      return ConsulTxn.perform(kv, guard, cas(doneKey, Optional.empty(), body),
          cas(attemptKey, Optional.of(stored), body)).map(r -> completed);
    });
  }

  @Override
  public RunRecord fail(RunRecord attempt, String failure) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(failure, "failure must not be null");
    ensureOpen();
    String cut = RunRecord.failureText(failure);
    String folder = keys.ledgerFolderOf(attempt.job());
    String attemptKey = attemptKey(folder, attempt.attempt());
    String what = "recording the failure of attempt " + attempt.attempt() + " of job '"
        + attempt.job() + "'";
    return retried(what, () -> {
      Value stored = kv.getValue(attemptKey).orElseThrow(() -> new IllegalArgumentException(
          "attempt " + attempt.attempt() + " of job '" + attempt.job() + "' is not in this ledger"
              + " (no key " + attemptKey + "; was it begun with another keyPrefix, or deleted?)"));
      RunRecord current = sameAttempt(stored, attempt, what);
      if (current.status() != RunRecord.Status.STARTED) {
        return Optional.of(current);
      }
      RunRecord failed = finished(current, RunRecord.Status.FAILED, cut);
      return ConsulTxn.perform(kv, cas(attemptKey, Optional.of(stored), json(failed)))
          .map(r -> failed);
    });
  }

  @Override
  public List<RunRecord> history(String job, int limit) {
    RunKeys.checkJob(job);
    RunKeys.checkLimit(limit);
    ensureOpen();
    String folder = keys.ledgerFolderOf(job);
    return calls.run("reading the history of job '" + job + "'", () -> {
      List<RunRecord> all = new ArrayList<>();
      for (Value v : kv.getValues(folder + ATTEMPTS)) {
        all.add(parse(v, job, null));
      }
      all.sort(Comparator.comparingLong(RunRecord::attempt).reversed());
      return List.copyOf(all.subList(0, Math.min(limit, all.size())));
    });
  }

  /** Stops the call pool and, if this ledger created its client, destroys it. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    calls.close();
    if (ownsClient) {
      consul.destroy();
    }
  }

  @Override
  public String toString() {
    return "ConsulRunLedger[" + calls.target() + ", prefix=" + keys.prefix() + "/"
        + KeyLayout.LEDGER_SEGMENT + "/]";
  }

  // ---------------------------------------------------------------- transactions and retries

  /** One read-then-transact round: the result, or empty when the transaction was rolled back. */
  private interface Round<R> {
    Optional<R> run() throws Exception;
  }

  /**
   * Runs {@code round} until its transaction commits (or it answers without one), within one call
   * timeout; a rolled-back round wrote nothing, so it is safe to read again and retry.
   */
  private <R> R retried(String what, Round<R> round) {
    return calls.run(what, () -> {
      for (int tries = 1; ; tries++) {
        Optional<R> result = round.run();
        if (result.isPresent()) {
          return result.get();
        }
        long backoffMs = ThreadLocalRandom.current().nextLong(1, Math.min(MAX_BACKOFF_MS, tries) + 1);
        if (ConsulCalls.remainingNanos() <= TimeUnit.MILLISECONDS.toNanos(backoffMs)) {
          throw new LeaseStoreUnavailableException(what + ": lost " + tries + " check-and-set"
              + " races to concurrent writers of the job's records within " + calls.timeout()
              + "; nothing was written by this call. Retry, or raise callTimeout", null);
        }
        Thread.sleep(backoffMs);
      }
    });
  }

  private static Operation cas(String key, Optional<Value> current, ObjectNode value) {
    return Operation.builder(Verb.CHECK_AND_SET).key(key).value(text(value))
        .index(BigInteger.valueOf(current.map(Value::getModifyIndex).orElse(0L))).build();
  }

  private static Operation checkIndex(Value current) {
    return Operation.builder(Verb.CHECK_INDEX).key(current.getKey())
        .index(BigInteger.valueOf(current.getModifyIndex())).build();
  }

  private static Operation checkNotExists(String key) {
    return ImmutableOperation.builder().verb("check-not-exists").key(key).build();
  }

  // ---------------------------------------------------------------- keys

  private static String doneKey(String folder, String run) {
    return folder + DONE + KeyLayout.encode(run);
  }

  private static String attemptKey(String folder, long id) {
    return folder + ATTEMPTS + String.format("%019d", id);
  }

  /** The highest attempt id among the job's records: for a job whose counter is absent. */
  private long highestAttemptId(String folder) {
    long max = 0;
    for (String key : kv.getKeys(folder + ATTEMPTS)) {
      String id = key.substring(key.lastIndexOf('/') + 1);
      try {
        max = Math.max(max, Long.parseLong(id));
      } catch (NumberFormatException e) {
        throw notOurs(key, "an attempt key ends in 19 digits", e);
      }
    }
    return max;
  }

  // ---------------------------------------------------------------- records as JSON

  private long fenceOf(Optional<Value> fence) {
    return fence.isEmpty() ? 0 : number(fence.get(), "token");
  }

  private long counterOf(Value counter) {
    return number(counter, "last");
  }

  private static long number(Value v, String field) {
    JsonNode n = tree(v).get(field);
    if (n == null || !n.canConvertToExactIntegral() || !n.canConvertToLong() || n.asLong() < 0) {
      throw notOurs(v.getKey(), "expected {\"" + field + "\": a whole number >= 0}", null);
    }
    return n.asLong();
  }

  private static JsonNode tree(Value v) {
    String text = v.getValueAsString(StandardCharsets.UTF_8).orElse("");
    try {
      JsonNode n = JSON.readTree(text);
      if (n == null || !n.isObject()) {
        throw notOurs(v.getKey(), "expected a JSON object", null);
      }
      return n;
    } catch (JsonProcessingException e) {
      throw notOurs(v.getKey(), "not JSON", e);
    }
  }

  private static ObjectNode json(RunRecord r) {
    ObjectNode n = JSON.createObjectNode();
    n.put("job", r.job()).put("run", r.run()).put("attempt", r.attempt()).put("token", r.token())
        .put("holder", r.holder().value()).put("status", r.status().name())
        .put("started", r.started().toString())
        .put("finished", r.finished() == null ? null : r.finished().toString())
        .put("failure", r.failure());
    return n;
  }

  private static String text(ObjectNode n) {
    try {
      return JSON.writeValueAsString(n);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write a run record as JSON", e);
    }
  }

  /** The record in {@code v}, checked to belong to {@code job} (and {@code run} unless null). */
  private static RunRecord parse(Value v, String job, @Nullable String run) {
    JsonNode n = tree(v);
    RunRecord r;
    try {
      JsonNode finished = n.path("finished");
      JsonNode failure = n.path("failure");
      r = new RunRecord(n.path("job").asText(), n.path("run").asText(),
          n.path("attempt").asLong(), n.path("token").asLong(),
          new HolderId(n.path("holder").asText()), Instant.parse(n.path("started").asText()),
          finished.isTextual() ? Instant.parse(finished.asText()) : null,
          RunRecord.Status.valueOf(n.path("status").asText()),
          failure.isTextual() ? failure.asText() : null);
    } catch (RuntimeException e) {
      throw notOurs(v.getKey(), "not a run record (" + e.getMessage() + ")", e);
    }
    if (!r.job().equals(job) || (run != null && !r.run().equals(run))) {
      throw notOurs(v.getKey(), "it records job '" + r.job() + "', run '" + r.run() + "'", null);
    }
    return r;
  }

  private static RunRecord completed(Value v, String job, String run) {
    RunRecord r = parse(v, job, run);
    if (r.status() != RunRecord.Status.COMPLETED) {
      throw notOurs(v.getKey(), "a completion record with status " + r.status(), null);
    }
    return r;
  }

  /** The stored record of {@code attempt}, checked to be that attempt and not a reused id. */
  private static RunRecord sameAttempt(Value stored, RunRecord attempt, String what) {
    RunRecord r = parse(stored, attempt.job(), null);
    if (r.attempt() != attempt.attempt() || !r.run().equals(attempt.run())
        || r.token() != attempt.token() || !r.holder().equals(attempt.holder())
        || !r.started().equals(attempt.started())) {
      throw new LeaseException(what + ": " + stored.getKey() + " holds another attempt (run '"
          + r.run() + "', token " + r.token() + ", started " + r.started() + "): the records were"
          + " deleted out of band and the id handed out again; nothing was recorded");
    }
    return r;
  }

  private static RunRecord finished(RunRecord r, RunRecord.Status status, @Nullable String failure) {
    Instant now = Instant.now();
    return new RunRecord(r.job(), r.run(), r.attempt(), r.token(), r.holder(), r.started(),
        now.isBefore(r.started()) ? r.started() : now, status, failure);
  }

  private static LeaseException notOurs(String key, String why, @Nullable Throwable cause) {
    return new LeaseException("Consul key " + key + " in the run ledger's reserved namespace does"
        + " not hold what the ledger wrote: " + why + ". Something else wrote there; remove the"
        + " key or restore it", cause);
  }

  // ---------------------------------------------------------------- checks

  private static void requireToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token is positive, got " + token
          + "; pass the token of the job's current lease grant");
    }
  }


  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this ConsulRunLedger is closed");
    }
  }

  /** Builds a {@link ConsulRunLedger}; nothing is sent to Consul until the first call. */
  public static final class Builder {
    final ClientOptions options;

    Builder(ClientOptions options) {
      this.options = options;
    }

    /**
     * The key prefix of the lease stores whose jobs this ledger records (the records live in
     * {@code <prefix>/.once/}); default {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}. Checked as
     * {@link ConsulLeaseStore.Builder#keyPrefix} checks it.
     */
    public Builder keyPrefix(String keyPrefix) {
      options.keyPrefix(keyPrefix);
      return this;
    }

    /**
     * The bound on every call of the ledger's own (all its HTTP requests and check-and-set retries
     * together); default 2 s, at most 5 min. The work in {@link #complete} is not bounded.
     */
    public Builder callTimeout(Duration callTimeout) {
      options.callTimeout(callTimeout);
      return this;
    }

    /** As {@link ConsulLeaseStore.Builder#maxConcurrentCalls}. */
    public Builder maxConcurrentCalls(int maxConcurrentCalls) {
      options.maxConcurrentCalls(maxConcurrentCalls);
      return this;
    }

    /**
     * The ACL token sent with every request; it needs {@code key:write} on the key prefix. Only for
     * ledgers built from a URL.
     */
    public Builder aclToken(String aclToken) {
      options.aclToken(aclToken, "ledger");
      return this;
    }

    /** As {@link ConsulLeaseStore.Builder#aclTokenFile}. */
    public Builder aclTokenFile(java.nio.file.Path file) {
      options.aclTokenFile(file, "ledger");
      return this;
    }

    /** As {@link ConsulLeaseStore.Builder#tls}. */
    public Builder tls(java.nio.file.Path trustCert, java.nio.file.Path clientCert,
        java.nio.file.Path clientKey) {
      options.tls(trustCert, clientCert, clientKey, "ledger");
      return this;
    }

    /** The ledger. */
    public ConsulRunLedger build() {
      if (options.client != null) {
        return new ConsulRunLedger(this, options.client, false);
      }
      return new ConsulRunLedger(this, options.open().consul(), true);
    }
  }
}
