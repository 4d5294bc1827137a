package dev.leases.etcd;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
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
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Run records in etcd, next to an {@link EtcdLeaseStore}'s keys, for
 * {@link dev.leases.once.ExactlyOnce}: a key-value ledger ({@code T} is {@code Void}, see
 * {@link RunLedger}).
 *
 * <pre>{@code
 * EtcdLeaseStore store = EtcdLeaseStore.builder("http://127.0.0.1:2379").build();
 * EtcdRunLedger ledger = EtcdRunLedger.builder("http://127.0.0.1:2379").build();
 * ExactlyOnce<Void> once = ExactlyOnce.builder(store, ledger).ttl(Duration.ofSeconds(30)).build();
 * once.run("invoice-run", "2026-01-31", (none, ctx) -> sendInvoicesIdempotently(ctx.token()));
 * }</pre>
 *
 * <p><b>Keys.</b> Under the key prefix {@code p} (give it the store's), job {@code j}'s records live
 * in {@code p/once/E(j)/} with {@code E} the injective percent-encoding of the name (never a raw
 * name, never a {@code /}): {@code fence} (the highest token that began an attempt),
 * {@code attempt/<id>} (one JSON record per attempt) and {@code done/E(run)} (the completion, the
 * completed attempt's record). Everything under {@code p/} is refused as a resource key by an
 * {@link EtcdFence} with the same prefix, so no fenced write can touch them. An attempt's id is the
 * etcd revision at which its {@code begin} read the job's keys: unique for the job (the write checks
 * that no other begin came between), larger for later attempts, and never reused, even after the
 * records are deleted.
 *
 * <p><b>Atomicity.</b> Each operation reads the keys it decides on at one revision and writes in one
 * etcd transaction whose compares check that those keys are still as read (the fence's and the
 * attempt's {@code mod_revision}, the completion's absence); when another client changed one in
 * between, the transaction writes nothing and the operation reads and decides again, within the
 * call timeout. So {@link #begin} raises the fence (it rewrites it on every begin, which is what
 * serialises begins and completions of one job) and then records a STARTED attempt, or returns the
 * completion, as one step; {@link #complete} writes the completion and marks the attempt COMPLETED
 * only if the fence is still at most the attempt's token and no completion exists. Once
 * {@code begin} under token {@code t} returns, no attempt under a lower token completes.
 *
 * <p><b>What holds.</b> At most one completion per (job, run) is ever written, and only under the
 * job's current token. The work runs <em>before</em> that write and is not undone: a runner that
 * crashes mid-run leaves its effects and a STARTED record, and the next firing after its lease
 * expires runs the work again; a runner whose completion is fenced out ran its work too. Work that
 * is not transactional with this record must therefore be idempotent (or fence its own writes with
 * {@code ctx.token()}, e.g. through {@link EtcdFence}); then its effect happens exactly once.
 * etcd persists every committed write (WAL and snapshots, fsynced), so a member or cluster restart
 * keeps the records; restoring an older snapshot or moving to a new cluster forgets later
 * completions (those runs run again) and makes revisions, hence tokens and attempt ids, smaller.
 *
 * <p><b>Out-of-band deletes.</b> Deleting a run's {@code done} key forgets its completion: the next
 * firing runs the work again. Deleting the job's {@code fence} forgets the highest token:
 * {@link #complete} then refuses to record any completion it cannot check ({@link LeaseException},
 * the run stays incomplete), until a new {@code begin} writes a fence again. Deleting attempt records
 * only shortens {@link #history}; completing an attempt whose record is gone records it again.
 *
 * <p><b>Times.</b> etcd has no clock a client can read, so {@code started} and {@code finished} are
 * this process's wall-clock time when the record was written ({@code finished} never before
 * {@code started}).
 *
 * <p><b>Calls.</b> Every call is bounded by {@code callTimeout}, retries and lost races included;
 * {@link #complete}'s budget starts after the work returns (the work itself is not bounded).
 * Failures throw {@link LeaseStoreUnavailableException} (outcome unknown), and
 * {@link LeaseStoreClosedException} once closed. A client built by this ledger bounds every gRPC
 * call and fails at once when no endpoint accepts connections (as {@link EtcdLeaseStore}'s does).
 *
 * <p>Thread-safe. {@link #close()} closes the client only if this ledger built it.
 */
public final class EtcdRunLedger implements RunLedger<Void>, AutoCloseable {

  private static final long MAX_BACKOFF_MILLIS = 64;

  private final Client client;
  private final boolean ownsClient;
  private final ClientSettings.Opened opened;
  private final KV kv;
  private final KeyLayout keys;
  private final Calls calls;
  private final AtomicBoolean closed = new AtomicBoolean();

  private EtcdRunLedger(ClientSettings.Opened opened) {
    this.client = opened.client();
    this.ownsClient = opened.owned();
    this.opened = opened;
    this.kv = client.getKVClient();
    this.keys = opened.keys();
    this.calls = new Calls(opened.callTimeout(), closed::get, opened.endpoints(), "EtcdRunLedger",
        opened.user(), opened.keys().prefix());
  }

  /**
   * A ledger on your client; closing the ledger does not close it. Give the client gRPC deadlines
   * and {@code waitForReady(false)} as {@link EtcdLeaseStore#builder(Client)} describes.
   */
  public static Builder builder(Client client) {
    return new Builder(ClientSettings.of(client));
  }

  /**
   * A ledger that builds (and on {@link #close()} closes) its own client for {@code endpoints},
   * e.g. {@code "http://127.0.0.1:2379"}, or {@code "https://..."} with {@link Builder#tls}; add
   * {@link Builder#user} for a cluster with authentication enabled (give it the store's settings).
   */
  public static Builder builder(String... endpoints) {
    return new Builder(ClientSettings.of(endpoints));
  }

  /** A builder on settings parsed elsewhere (the factories). */
  static Builder builder(ClientSettings settings) {
    return new Builder(settings);
  }

  @Override
  public Optional<RunRecord> completion(String job, String run) {
    RunKeys.check(job, run);
    ensureOpen();
    ByteSequence done = keys.runDoneKey(job, run);
    KeyValue d = first(calls.retrying(() -> kv.get(done), calls.budget(),
        "read the completion of run '" + run + "' of job '" + job + "'"));
    return d == null ? Optional.empty() : Optional.of(record(d, job, run));
  }

  @Override
  public RunRecord begin(String job, String run, long token, HolderId holder) {
    RunKeys.check(job, run);
    Objects.requireNonNull(holder, "holder must not be null");
    requireToken(token);
    ensureOpen();
    String what = "begin run '" + run + "' of job '" + job + "' with token " + token;
    ByteSequence fence = keys.runFenceKey(job);
    ByteSequence done = keys.runDoneKey(job, run);
    ByteSequence encoded = EtcdFence.encode(token);
    Calls.Budget budget = calls.budget();
    for (int round = 1; ; round++) {
      TxnResponse read = calls.retrying(() -> kv.txn()
          .Then(Op.get(fence, GetOption.DEFAULT), Op.get(done, GetOption.DEFAULT))
          .commit(), budget, what);
      KeyValue f = first(read.getGetResponses().get(0));
      KeyValue d = first(read.getGetResponses().get(1));
      long highest = fenceToken(f);
      if (highest > token) {
        throw new FencedOutException(RunKeys.leaseName(job), token, highest);
      }
      Cmp fenceUnchanged = new Cmp(fence, Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision(f)));
      TxnResponse w;
      RunRecord result;
      // Not repeated on failure: a repeat after a lost answer would record a second attempt.
      if (d != null) {
        result = record(d, job, run);
        w = calls.once(() -> kv.txn()
            .If(fenceUnchanged, new Cmp(done, Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision(d))))
            .Then(Op.put(fence, encoded, PutOption.DEFAULT))
            .commit(), budget, what);
      } else {
        long id = read.getHeader().getRevision();
        ByteSequence attempt = keys.runAttemptKey(job, id);
        result = new RunRecord(job, run, id, token, holder, Instant.now(), null,
            RunRecord.Status.STARTED, null);
        ByteSequence value = ByteSequence.from(RunRecordJson.write(result));
        w = calls.once(() -> kv.txn()
            .If(fenceUnchanged, absent(done), absent(attempt))
            .Then(Op.put(fence, encoded, PutOption.DEFAULT),
                Op.put(attempt, value, PutOption.DEFAULT))
            .commit(), budget, what);
      }
      if (w.isSucceeded()) {
        return result;
      }
      lostRace(budget, what, round);
    }
  }

  /**
   * Runs {@code work} (with {@code null}), then records the completion as the class describes.
   *
   * @throws FencedOutException if a higher token has begun an attempt of the job; nothing marked
   * @throws LeaseException if the attempt is no longer STARTED in etcd (failed meanwhile), or the
   *     job's fence was deleted out of band; nothing recorded
   */
  @Override
  public RunRecord complete(RunRecord attempt, Consumer<Void> work) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(work, "work must not be null");
    ensureOpen();
    work.accept(null);
    String job = attempt.job();
    String what = "complete attempt " + attempt.attempt() + " of run '" + attempt.run()
        + "' of job '" + job + "' with token " + attempt.token();
    ByteSequence fence = keys.runFenceKey(job);
    ByteSequence done = keys.runDoneKey(job, attempt.run());
    ByteSequence attemptKey = keys.runAttemptKey(job, attempt.attempt());
    Calls.Budget budget = calls.budget();
    for (int round = 1; ; round++) {
      TxnResponse read = calls.retrying(() -> kv.txn()
          .Then(Op.get(fence, GetOption.DEFAULT), Op.get(done, GetOption.DEFAULT),
              Op.get(attemptKey, GetOption.DEFAULT))
          .commit(), budget, what);
      KeyValue f = first(read.getGetResponses().get(0));
      KeyValue d = first(read.getGetResponses().get(1));
      KeyValue a = first(read.getGetResponses().get(2));
      long highest = fenceToken(f);
      if (highest > attempt.token()) {
        throw new FencedOutException(RunKeys.leaseName(job), attempt.token(), highest);
      }
      if (d != null) {
        return record(d, job, attempt.run());
      }
      if (f == null) {
        throw new LeaseException(what + ": the job's fence " + text(fence) + " is gone (deleted"
            + " out of band?), so this completion cannot be checked against later tokens; nothing"
            + " was recorded, and the next firing runs the work again");
      }
      if (a != null) {
        RunRecord stored = attemptRecord(a, attempt);
        if (stored.status() != RunRecord.Status.STARTED) {
          throw new LeaseException(what + ": the attempt is " + stored.status() + " in etcd, no"
              + " longer STARTED (failed meanwhile?); nothing was recorded");
        }
      }
      RunRecord completed = finished(attempt, RunRecord.Status.COMPLETED, null);
      ByteSequence value = ByteSequence.from(RunRecordJson.write(completed));
      // Safe to repeat: a repeat after a lost answer loses its compares, and the next round reads
      // the completion it wrote.
      TxnResponse w = calls.retrying(() -> kv.txn()
          .If(new Cmp(fence, Cmp.Op.EQUAL, CmpTarget.modRevision(f.getModRevision())),
              absent(done),
              new Cmp(attemptKey, Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision(a))))
          .Then(Op.put(done, value, PutOption.DEFAULT),
              Op.put(attemptKey, value, PutOption.DEFAULT))
          .commit(), budget, what);
      if (w.isSucceeded()) {
        return completed;
      }
      lostRace(budget, what, round);
    }
  }

  @Override
  public RunRecord fail(RunRecord attempt, String failure) {
    RunKeys.requireStarted(attempt);
    Objects.requireNonNull(failure, "failure must not be null");
    ensureOpen();
    String cut = RunRecord.failureText(failure);
    String what = "record the failure of attempt " + attempt.attempt() + " of job '"
        + attempt.job() + "'";
    ByteSequence key = keys.runAttemptKey(attempt.job(), attempt.attempt());
    Calls.Budget budget = calls.budget();
    for (int round = 1; ; round++) {
      KeyValue a = first(calls.retrying(() -> kv.get(key), budget, what));
      if (a == null) {
        throw new IllegalArgumentException("attempt " + attempt.attempt() + " of job '"
            + attempt.job() + "' is not in etcd at " + text(key) + " (begun by another ledger"
            + " prefix, or deleted out of band)");
      }
      RunRecord stored = attemptRecord(a, attempt);
      if (stored.status() != RunRecord.Status.STARTED) {
        return stored;
      }
      RunRecord failed = finished(attempt, RunRecord.Status.FAILED, cut);
      ByteSequence value = ByteSequence.from(RunRecordJson.write(failed));
      // Safe to repeat: a repeat after a lost answer loses its compare and reads the FAILED record.
      TxnResponse w = calls.retrying(() -> kv.txn()
          .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(a.getModRevision())))
          .Then(Op.put(key, value, PutOption.DEFAULT))
          .commit(), budget, what);
      if (w.isSucceeded()) {
        return failed;
      }
      lostRace(budget, what, round);
    }
  }

  @Override
  public List<RunRecord> history(String job, int limit) {
    RunKeys.checkJob(job);
    RunKeys.checkLimit(limit);
    ensureOpen();
    ByteSequence prefix = keys.runAttemptPrefix(job);
    GetResponse r = calls.retrying(() -> kv.get(prefix, GetOption.builder().isPrefix(true)
        .withSortField(GetOption.SortTarget.KEY).withSortOrder(GetOption.SortOrder.DESCEND)
        .withLimit(limit).build()), calls.budget(), "read the history of job '" + job + "'");
    List<RunRecord> records = new ArrayList<>(r.getKvs().size());
    for (KeyValue kv : r.getKvs()) {
      RunRecord record = RunRecordJson.read(kv.getValue().getBytes(), text(kv.getKey()));
      requireJob(record, job, kv);
      records.add(record);
    }
    return List.copyOf(records);
  }

  /** Closes the client if this ledger built it. Idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true) && ownsClient) {
      opened.closeOwned();
    }
  }

  @Override
  public String toString() {
    return "EtcdRunLedger[prefix=" + keys.prefix() + ", callTimeout=" + calls.timeout() + "]";
  }

  // ---------------------------------------------------------------- helpers

  /**
   * Another client changed the job's keys between this operation's read and its write, which
   * therefore wrote nothing: wait a little (randomised, so that racers spread out) and read again,
   * unless the budget is spent.
   */
  private void lostRace(Calls.Budget budget, String what, int round) {
    long max = Math.min(MAX_BACKOFF_MILLIS, 1L << Math.min(round, 6));
    long pause = ThreadLocalRandom.current().nextLong(1, max + 1);
    if (budget.leftNanos() <= TimeUnit.MILLISECONDS.toNanos(pause)) {
      throw new LeaseStoreUnavailableException("etcd call '" + what + "' lost the race for the"
          + " job's records to other clients " + round + " times within the call timeout of "
          + calls.timeout() + "; none of its writes landed. Try again, or raise callTimeout", null);
    }
    try {
      TimeUnit.MILLISECONDS.sleep(pause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while '" + what + "' waited to try"
          + " again; none of its writes landed", e);
    }
  }

  private static RunRecord finished(RunRecord attempt, RunRecord.Status status, @Nullable String failure) {
    Instant now = Instant.now();
    Instant finished = now.isBefore(attempt.started()) ? attempt.started() : now;
    return new RunRecord(attempt.job(), attempt.run(), attempt.attempt(), attempt.token(),
        attempt.holder(), attempt.started(), finished, status, failure);
  }

  /** The stored record of {@code attempt}, checked to be the same attempt. */
  private RunRecord attemptRecord(KeyValue kv, RunRecord attempt) {
    RunRecord stored = RunRecordJson.read(kv.getValue().getBytes(), text(kv.getKey()));
    if (!stored.job().equals(attempt.job()) || !stored.run().equals(attempt.run())
        || stored.attempt() != attempt.attempt() || stored.token() != attempt.token()) {
      throw new IllegalArgumentException("attempt " + attempt.attempt() + " of job '"
          + attempt.job() + "' in etcd is run '" + stored.run() + "' under token " + stored.token()
          + ", not run '" + attempt.run() + "' under token " + attempt.token()
          + "; pass the record that begin() returned");
    }
    return stored;
  }

  /** A completion record, checked to belong to (job, run). */
  private static RunRecord record(KeyValue kv, String job, String run) {
    RunRecord r = RunRecordJson.read(kv.getValue().getBytes(), text(kv.getKey()));
    requireJob(r, job, kv);
    if (!r.run().equals(run) || r.status() != RunRecord.Status.COMPLETED) {
      throw new IllegalStateException("etcd key '" + LastTenure.abbreviate(text(kv.getKey()))
          + "' holds a " + r.status() + " record of run '" + r.run() + "', not the completion of"
          + " run '" + run + "'; it was not written by EtcdRunLedger");
    }
    return r;
  }

  private static void requireJob(RunRecord r, String job, KeyValue kv) {
    if (!r.job().equals(job)) {
      throw new IllegalStateException("etcd key '" + LastTenure.abbreviate(text(kv.getKey()))
          + "' holds a record of job '" + r.job() + "', not '" + job + "'; it was not written by"
          + " EtcdRunLedger");
    }
  }

  /** The token in the job's fence key, 0 if there is none. */
  private static long fenceToken(@Nullable KeyValue f) {
    if (f == null) {
      return 0;
    }
    long t = EtcdFence.decode(f);
    if (t < 0) {
      throw new IllegalStateException("etcd key '" + LastTenure.abbreviate(text(f.getKey()))
          + "' does not hold a fence token written by EtcdRunLedger; delete it, or give the ledger"
          + " a keyPrefix that nothing else writes under");
    }
    return t;
  }

  private static Cmp absent(ByteSequence key) {
    return new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0));
  }

  /** A key's mod_revision, 0 when absent (what a compare on a missing key sees). */
  private static long modRevision(@Nullable KeyValue kv) {
    return kv == null ? 0 : kv.getModRevision();
  }

  private static @Nullable KeyValue first(GetResponse r) {
    return r.getKvs().isEmpty() ? null : r.getKvs().get(0);
  }

  private static String text(ByteSequence key) {
    return key.toString(StandardCharsets.UTF_8);
  }

  private static void requireToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token is positive, got " + token
          + "; pass the token of the job lease's grant");
    }
  }


  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this EtcdRunLedger is closed; open a new one");
    }
  }

  /** Configures an {@link EtcdRunLedger}; every setting is validated when it is set. */
  public static final class Builder {
    private final ClientSettings settings;

    private Builder(ClientSettings settings) {
      this.settings = settings;
    }

    /**
     * The key prefix (default {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX}), the same rules as
     * {@link EtcdLeaseStore.Builder#keyPrefix}: give it your store's, so that its
     * {@link EtcdFence} refuses writes to the ledger's keys.
     */
    public Builder keyPrefix(String keyPrefix) {
      settings.keyPrefix(keyPrefix);
      return this;
    }

    /** The longest one call may take, retries and lost races included (default 5 s). */
    public Builder callTimeout(Duration callTimeout) {
      settings.callTimeout(callTimeout);
      return this;
    }

    /** As {@link EtcdLeaseStore.Builder#user(String, String)}. */
    public Builder user(String user, String password) {
      settings.user(user, password);
      return this;
    }

    /** As {@link EtcdLeaseStore.Builder#tls(Path)}. */
    public Builder tls(@Nullable Path trustCertPem) {
      settings.tls(trustCertPem, null, null);
      return this;
    }

    /** As {@link EtcdLeaseStore.Builder#tls(Path, Path, Path)}. */
    public Builder tls(@Nullable Path trustCertPem, Path clientCertPem, Path clientKeyPem) {
      settings.mutualTls(trustCertPem, clientCertPem, clientKeyPem);
      return this;
    }

    /** The ledger. */
    public EtcdRunLedger build() {
      return new EtcdRunLedger(settings.open());
    }
  }
}
