package dev.leases.etcd;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases on etcd v3 (jetcd): each tenure is an etcd lease with the lease key attached to it.
 *
 * <p><b>Guarantees.</b> Expiry is judged by etcd's lessor (the Raft leader's clock), never by this
 * process's clock. The fencing token is the lease key's {@code create_revision}: a cluster-wide,
 * persisted revision that is the same for every renewal within a tenure and larger for every new
 * tenure — after a release, an expiry, a change of holder, even after someone deletes the keys by
 * hand (a re-created key gets a newer revision). Acquire is one transaction
 * {@code If(create_revision(key) == 0) Then(put key with lease, put companion)}, so of many
 * racing contenders exactly one wins; the losers revoke the etcd lease they granted for the attempt.
 * Reads are linearizable. A companion key that never expires records the last tenure, so
 * {@link #inspect} tells a released lease ({@code FREE}) from one whose holder stopped renewing
 * ({@code EXPIRED}), and {@link #token} reports the highest token even when no lease key exists;
 * with neither key (never granted, or both deleted by hand) it reports etcd's current revision, a
 * bound that no earlier token exceeds and every later one does.
 * Tokens are revisions of one cluster: restoring an older snapshot or moving to a new cluster makes
 * them smaller — reset the fences of guarded resources when you do that.
 *
 * <p><b>TTL granularity.</b> etcd leases have whole-second TTLs: a requested TTL is rounded up to
 * whole seconds, and the server raises a TTL below its minimum (about 1.5 x the election timeout,
 * i.e. 2 s with the default 1 s election timeout). Every {@link LeaseGrant#ttl()} reports the TTL
 * the server actually granted. etcd reports the remaining TTL in whole seconds too, so
 * {@link LeaseState.Held#remaining()} is an upper bound with one-second resolution (never more than
 * the granted TTL). etcd revokes expired leases in a background loop (every 500 ms), so a lease
 * stays held, refusing contenders, for up to about half a second after its TTL ran out. Grant and
 * {@code expiresAt} times are this process's send time plus the granted TTL: etcd does not expose
 * its clock, and the server's expiry is never earlier than that.
 *
 * <p><b>Failover.</b> Renewals go to the etcd leader (a follower forwards them). When the etcd leader
 * changes, the new leader resets every lease to its full TTL plus the election timeout: leases are
 * extended, never shortened, so a holder that keeps renewing through the surviving members keeps
 * its lease and token. While the cluster has no leader, calls fail with {@link LeaseStoreUnavailableException}
 * (retried within the call timeout) and a holder must treat its lease as lost until a renewal lands.
 *
 * <p><b>Calls.</b> Every operation is bounded by {@code callTimeout}; calls that are safe to repeat
 * are retried while etcd answers {@code UNAVAILABLE}. A call that could not be sent because no
 * endpoint accepts connections fails at once (not after {@code callTimeout}) with a
 * {@link LeaseStoreUnavailableException} that names the endpoints and says they refused
 * connections. A client built by this store gives every gRPC call a deadline of {@code callTimeout}
 * and does not wait for a ready connection ({@code waitForReady(false)}); with your own
 * {@link Client}, configure deadlines or interceptors on it yourself and build it with
 * {@code waitForReady(false)} to fail fast as well (otherwise a refused connection is waited out
 * until {@code callTimeout}, when calls are abandoned).
 * Renewal is one bounded {@code keepAliveOnce} per call, driven by the caller (use
 * {@link dev.leases.leader.LeaderLoop}); jetcd's background {@code keepAlive} stream, which can stop
 * silently, is not used. {@link #onRelease} watches the lease key and fires on its {@code DELETE}
 * (release, expiry or manual delete); a lost watch only delays followers until the expiry they last
 * read.
 */
public final class EtcdLeaseStore implements LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(EtcdLeaseStore.class);

  /**
   * Whole seconds from 1 s up to etcd's maximum lease TTL (9,000,000,000 s). The server may raise a
   * TTL below its minimum; the grant reports it.
   */
  public static final TtlRange TTL_RANGE = new TtlRange(Duration.ofSeconds(1),
      Duration.ofSeconds(9_000_000_000L), Duration.ofSeconds(1));

  /** Used unless {@link Builder#callTimeout(Duration)} says otherwise. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(5);

  /** Used unless {@link Builder#keyPrefix(String)} says otherwise. */
  public static final String DEFAULT_KEY_PREFIX = "leases";

  static final Duration MAX_CALL_TIMEOUT = Duration.ofMinutes(10);
  private static final int MAX_ROUNDS = 4;
  private static final Duration CLOSE_REVOKE_WAIT = Duration.ofSeconds(1);

  private final Client client;
  private final boolean ownsClient;
  private final KV kv;
  private final Lease leases;
  private final Watch watch;
  private final KeyLayout keys;
  private final Calls calls;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Set<Watch.Watcher> watchers = ConcurrentHashMap.newKeySet();
  private final Set<CompletableFuture<?>> pendingRevokes = ConcurrentHashMap.newKeySet();

  private EtcdLeaseStore(ClientSettings.Opened opened) {
    this.client = opened.client();
    this.ownsClient = opened.owned();
    this.kv = client.getKVClient();
    this.leases = client.getLeaseClient();
    this.watch = client.getWatchClient();
    this.keys = opened.keys();
    this.calls = new Calls(opened.callTimeout(), closed::get, opened.endpoints());
  }

  /**
   * A store on your client. Closing the store does not close the client; give the client gRPC
   * deadlines (an interceptor) if calls to an unreachable member must not linger, and
   * {@code waitForReady(false)} if calls to endpoints that refuse connections must fail at once.
   */
  public static Builder builder(Client client) {
    return new Builder(ClientSettings.of(client));
  }

  /**
   * A store that builds (and on {@link #close()} closes) its own client for {@code endpoints}, e.g.
   * {@code "http://127.0.0.1:2379"}. For TLS or authentication build a {@link Client} yourself and
   * use {@link #builder(Client)}.
   */
  public static Builder builder(String... endpoints) {
    return new Builder(ClientSettings.of(endpoints));
  }

  // ---------------------------------------------------------------- the SPI

  /**
   * Acquires {@code name} for {@code holder}, or renews it if {@code holder} has it. A renewal reads
   * the lease key, checks the holder, sends one keep-alive to the attached etcd lease and then reads
   * the key again: it keeps the token only if the key is still the one it read (same
   * {@code create_revision}, etcd lease and holder). A keep-alive alone proves nothing, since
   * deleting the key by hand leaves its etcd lease alive while someone else acquires the name; then
   * the renewal revokes that orphaned etcd lease and answers as for any contender (empty while the
   * other holds it). If the etcd lease already expired, the holder contends again and, if it wins,
   * gets a larger token. A renewal asking for a longer TTL than its etcd lease has moves the key to
   * a new etcd lease in one transaction that checks the key is unchanged, keeping the token.
   */
  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    TTL_RANGE.check(ttl);
    ensureOpen();
    long seconds = TTL_RANGE.roundUp(ttl).toSeconds();
    ByteSequence key = keys.leaseKey(name);
    ByteSequence holderValue = utf8(holder.value());
    Calls.Budget budget = calls.budget();
    KeyValue current = get(key, budget, "read lease '" + name + "'");
    for (int round = 0; round < MAX_ROUNDS; round++) {
      if (current != null) {
        if (!current.getValue().equals(holderValue)) {
          return Optional.empty();
        }
        Renewal renewal = renew(name, holder, current, seconds, budget);
        if (renewal.grant() != null) {
          return Optional.of(renewal.grant());
        }
        current = renewal.now();
        continue;
      }
      long sent = System.currentTimeMillis();
      LeaseGrantResponse granted = calls.retrying(() -> leases.grant(seconds), budget,
          "grant a " + seconds + " s etcd lease for '" + name + "'");
      long leaseId = granted.getID();
      TxnResponse r;
      try {
        // Safe to repeat: a repeat after a lost answer finds the key on our own etcd lease.
        r = calls.retrying(() -> kv.txn()
            .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
            .Then(Op.put(key, holderValue, PutOption.builder().withLeaseId(leaseId).build()),
                Op.put(keys.lastKey(name), LastTenure.held(holder), PutOption.DEFAULT),
                Op.get(key, GetOption.DEFAULT))
            .Else(Op.get(key, GetOption.DEFAULT))
            .commit(), budget, "acquire '" + name + "'");
      } catch (RuntimeException e) {
        revokeLater(leaseId);
        throw e;
      }
      KeyValue now = first(r.getGetResponses().get(0));
      if (now != null && now.getLease() == leaseId) {
        return Optional.of(grant(name, holder, now.getCreateRevision(), sent, granted.getTTL()));
      }
      revokeLater(leaseId);
      current = now;
    }
    throw new LeaseStoreUnavailableException("lease '" + name + "' changed hands " + MAX_ROUNDS
        + " times during one call; nothing was granted, try again", null);
  }

  /** A renewal's outcome: the grant, or else the lease key as read after the failed attempt. */
  private record Renewal(LeaseGrant grant, KeyValue now) {
    static Renewal lost(KeyValue now) {
      return new Renewal(null, now);
    }
  }

  /**
   * One keep-alive for the etcd lease of the holder's key {@code read}, then the ownership check:
   * deleting a key does not revoke its etcd lease, so a keep-alive still succeeds after the key was
   * deleted by hand and someone else acquired it. Only if, after the keep-alive, the key is still
   * the one we read (same {@code create_revision}, same etcd lease, same holder) is the tenure ours;
   * otherwise our etcd lease carries nothing of ours and is revoked.
   */
  private Renewal renew(String name, HolderId holder, KeyValue read, long seconds,
      Calls.Budget budget) {
    long leaseId = requireOurs(read).getLease();
    long token = read.getCreateRevision();
    ByteSequence key = keys.leaseKey(name);
    long sent = System.currentTimeMillis();
    long ttl = keepAlive(leaseId, budget, name);
    if (ttl <= 0) {
      return Renewal.lost(get(key, budget, "read lease '" + name + "'"));
    }
    if (ttl >= seconds) {
      KeyValue now = get(key, budget, "read lease '" + name + "'");
      if (sameTenure(now, read)) {
        return new Renewal(grant(name, holder, token, sent, ttl), null);
      }
      revokeUnlessAttached(leaseId, now);
      return Renewal.lost(now);
    }
    // The caller asks for more than this etcd lease grants: move the key to a longer one, if it is
    // still exactly as read (an unchanged mod_revision: same tenure, etcd lease and holder).
    sent = System.currentTimeMillis();
    LeaseGrantResponse longer = calls.retrying(() -> leases.grant(seconds), budget,
        "grant a " + seconds + " s etcd lease for '" + name + "'");
    TxnResponse r;
    try {
      r = calls.retrying(() -> kv.txn()
          .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(token)),
              new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(read.getModRevision())))
          .Then(Op.put(key, read.getValue(),
              PutOption.builder().withLeaseId(longer.getID()).build()),
              Op.get(key, GetOption.DEFAULT))
          .Else(Op.get(key, GetOption.DEFAULT))
          .commit(), budget, "extend the TTL of '" + name + "'");
    } catch (RuntimeException e) {
      revokeLater(longer.getID());
      throw e;
    }
    KeyValue now = first(r.getGetResponses().get(0));
    revokeUnlessAttached(leaseId, now);
    if (now != null && now.getLease() == longer.getID()) {
      return new Renewal(grant(name, holder, token, sent, longer.getTTL()), null);
    }
    revokeLater(longer.getID());
    return Renewal.lost(now);
  }

  /**
   * Revokes {@code leaseId} after our key left it (moved to a longer etcd lease, or deleted by
   * hand and perhaps re-created by someone else), so that no orphaned etcd lease lingers until its
   * TTL; kept if the key {@code now} is still attached to it.
   */
  private void revokeUnlessAttached(long leaseId, KeyValue now) {
    if (now == null || now.getLease() != leaseId) {
      revokeLater(leaseId);
    }
  }

  /** Whether {@code now} is still the tenure {@code read}: same key incarnation, etcd lease, holder. */
  private static boolean sameTenure(KeyValue now, KeyValue read) {
    return now != null && now.getCreateRevision() == read.getCreateRevision()
        && now.getLease() == read.getLease() && now.getValue().equals(read.getValue());
  }

  /** The TTL a keep-alive granted, or 0 if the etcd lease no longer exists. */
  private long keepAlive(long leaseId, Calls.Budget budget, String name) {
    try {
      LeaseKeepAliveResponse r = calls.retrying(() -> leases.keepAliveOnce(leaseId), budget,
          "renew lease '" + name + "'");
      return Math.max(0, r.getTTL());
    } catch (LeaseStoreUnavailableException e) {
      if (Calls.code(e) == ErrorCode.NOT_FOUND) {
        return 0;
      }
      throw e;
    }
  }

  /**
   * Releases {@code name} if {@code holder} has it: one transaction deletes the lease key (waking
   * watchers) and records the release with its token in the companion key; then the etcd lease is
   * revoked in the background. A lease whose TTL ran out but that etcd has not revoked yet is still
   * in the store and is released like a live one.
   */
  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    ByteSequence key = keys.leaseKey(name);
    ByteSequence lastKey = keys.lastKey(name);
    ByteSequence holderValue = utf8(holder.value());
    Calls.Budget budget = calls.budget();
    KeyValue current = get(key, budget, "read lease '" + name + "'");
    if (current == null || !current.getValue().equals(holderValue)) {
      return false;
    }
    long token = current.getCreateRevision();
    ByteSequence releasedValue = LastTenure.released(token, holder);
    // Safe to repeat: a repeat after a lost answer finds our own release in the companion key.
    TxnResponse r = calls.retrying(() -> kv.txn()
        .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(token)),
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(holderValue)))
        .Then(Op.delete(key, DeleteOption.DEFAULT),
            Op.put(lastKey, releasedValue, PutOption.DEFAULT))
        .Else(Op.get(lastKey, GetOption.DEFAULT))
        .commit(), budget, "release '" + name + "'");
    boolean released = r.isSucceeded();
    if (!released) {
      KeyValue last = first(r.getGetResponses().get(0));
      released = last != null && last.getValue().equals(releasedValue);
    }
    if (released) {
      revokeLater(current.getLease());
    }
    return released;
  }

  /**
   * The latest grant's token while etcd holds a record of the name (the lease key or the companion
   * key). When neither exists — never granted, or both deleted by hand — the answer is etcd's
   * current revision, read with the keys: every token ever issued is a revision at or below it, and
   * every later grant's {@code create_revision} is above it. Never empty.
   */
  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return OptionalLong.of(snapshot(name, calls.budget()).bound());
  }

  /**
   * Reads the lease key and the companion key at one revision (linearizable), then the etcd lease's
   * remaining TTL. {@code HELD} while the lease key exists; {@code EXPIRED} when the key is gone but
   * the companion says a holder had it (it stopped renewing, or the key was deleted by hand);
   * {@code FREE} after a release or when never granted. For {@code EXPIRED}, etcd does not say when
   * the lease ran out: {@code expiredAt} is the time of this inspection, an upper bound.
   * {@link LeaseState#lastToken()} is {@link #token}'s answer: etcd's current revision when neither
   * key exists (never granted, or both deleted by hand).
   */
  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    Calls.Budget budget = calls.budget();
    for (int round = 0; round < MAX_ROUNDS; round++) {
      Snapshot s = snapshot(name, budget);
      if (s.lease == null) {
        if (s.last == null) {
          return new LeaseState.Free(name, s.revision());
        }
        LastTenure last = LastTenure.parse(s.last);
        return last.released()
            ? new LeaseState.Free(name, last.token())
            : new LeaseState.Expired(name, last.holder(), last.token(), Instant.now());
      }
      KeyValue lease = requireOurs(s.lease);
      HolderId holder = holderOf(lease);
      LeaseTimeToLiveResponse t = calls.retrying(
          () -> leases.timeToLive(lease.getLease(), LeaseOption.DEFAULT), budget,
          "read the TTL of lease '" + name + "'");
      long seconds;
      if (t.getTTL() >= 0) {
        // etcd truncates: the lease expires in under TTL + 1 seconds.
        seconds = t.getTTL() + 1;
        if (t.getGrantedTTL() > 0) {
          seconds = Math.min(seconds, t.getGrantedTTL());
        }
      } else if (round < MAX_ROUNDS - 1) {
        continue; // revoked between the two reads: read again
      } else {
        seconds = 0; // expired, not revoked yet: contenders are still refused
      }
      Duration remaining = Duration.ofSeconds(seconds);
      return new LeaseState.Held(name, holder, lease.getCreateRevision(),
          Instant.now().plus(remaining), remaining);
    }
    throw new IllegalStateException("unreachable");
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  /**
   * Watches the lease key and runs {@code listener} (on a jetcd thread) when it is deleted: released,
   * expired, or deleted by hand. By the time the listener runs someone else may already hold the
   * lease. A watch that breaks is resumed by jetcd; events may still be lost, so followers must poll
   * until the expiry they last read.
   */
  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    ensureOpen();
    Watch.Watcher watcher;
    try {
      watcher = watch.watch(keys.leaseKey(name), WatchOption.builder().withNoPut(true).build(),
          Watch.listener(response -> {
            for (WatchEvent e : response.getEvents()) {
              if (e.getEventType() == WatchEvent.EventType.DELETE) {
                try {
                  listener.run();
                } catch (RuntimeException ex) {
                  log.warn("release listener for lease '{}' threw", name, ex);
                }
                return;
              }
            }
          }, error -> log.debug("watch on lease '{}' failed: {}", name, error.toString())));
    } catch (RuntimeException e) {
      ensureOpen();
      throw new LeaseStoreUnavailableException("cannot watch lease '" + name + "': " + e, e);
    }
    watchers.add(watcher);
    if (closed.get() && watchers.remove(watcher)) {
      watcher.close();
      ensureOpen();
    }
    return () -> {
      if (watchers.remove(watcher)) {
        watcher.close();
      }
    };
  }

  /**
   * Closes the watches and, if this store built its client, the client (after waiting up to 1 s for
   * background revocations of released etcd leases). Leases stay in etcd until they are released or
   * expire. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    for (Watch.Watcher w : List.copyOf(watchers)) {
      watchers.remove(w);
      try {
        w.close();
      } catch (RuntimeException e) {
        log.debug("closing a watch failed", e);
      }
    }
    if (ownsClient) {
      CompletableFuture<?>[] pending = pendingRevokes.toArray(CompletableFuture<?>[]::new);
      if (pending.length > 0) {
        long waitMs = Math.min(calls.timeout().toMillis(), CLOSE_REVOKE_WAIT.toMillis());
        try {
          CompletableFuture.allOf(pending).get(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
          log.debug("closing with {} etcd lease revocation(s) unfinished; they expire by their TTL",
              pending.length);
        }
      }
      client.close();
    }
  }

  @Override
  public String toString() {
    return "EtcdLeaseStore[prefix=" + keys.prefix() + ", callTimeout=" + calls.timeout() + "]";
  }

  // ---------------------------------------------------------------- helpers

  /** The lease key and the companion key (null if absent), read at etcd revision {@code revision}. */
  private record Snapshot(KeyValue lease, KeyValue last, long revision) {

    /**
     * The fencing bound: the latest token on record, else the revision (no token issued so far is
     * larger, every later {@code create_revision} is).
     */
    long bound() {
      if (lease == null && last == null) {
        return revision;
      }
      long token = lease != null ? lease.getCreateRevision() : 0;
      return last != null ? Math.max(token, LastTenure.parse(last).token()) : token;
    }
  }

  /** The lease key and the companion key read at one revision. */
  private Snapshot snapshot(String name, Calls.Budget budget) {
    ByteSequence key = keys.leaseKey(name);
    ByteSequence lastKey = keys.lastKey(name);
    TxnResponse r = calls.retrying(() -> kv.txn()
        .Then(Op.get(key, GetOption.DEFAULT), Op.get(lastKey, GetOption.DEFAULT))
        .commit(), budget, "read lease '" + name + "'");
    List<GetResponse> gets = r.getGetResponses();
    return new Snapshot(first(gets.get(0)), first(gets.get(1)), r.getHeader().getRevision());
  }

  private KeyValue get(ByteSequence key, Calls.Budget budget, String what) {
    return first(calls.retrying(() -> kv.get(key), budget, what));
  }

  private static KeyValue first(GetResponse r) {
    return r.getKvs().isEmpty() ? null : r.getKvs().get(0);
  }

  private static LeaseGrant grant(String name, HolderId holder, long token, long sentMillis,
      long ttlSeconds) {
    return new LeaseGrant(name, holder, token, Instant.ofEpochMilli(sentMillis).plusSeconds(ttlSeconds),
        Duration.ofSeconds(ttlSeconds));
  }

  private static KeyValue requireOurs(KeyValue kv) {
    if (kv.getLease() == 0) {
      throw notOurs(kv);
    }
    return kv;
  }

  private static HolderId holderOf(KeyValue kv) {
    try {
      return new HolderId(kv.getValue().toString(StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      throw notOurs(kv);
    }
  }

  private static IllegalStateException notOurs(KeyValue kv) {
    return new IllegalStateException("etcd key '" + kv.getKey().toString(StandardCharsets.UTF_8)
        + "' was not written by EtcdLeaseStore (no etcd lease attached, or not a holder id); delete"
        + " it, or give this store a keyPrefix that nothing else writes under");
  }

  /**
   * Revokes an etcd lease we no longer need, in the background; best effort (it expires by its TTL
   * anyway). {@link #close()} waits briefly for these so that a release right before close does not
   * leave its etcd lease behind.
   */
  private void revokeLater(long leaseId) {
    if (closed.get()) {
      return;
    }
    try {
      CompletableFuture<?> f = leases.revoke(leaseId)
          .orTimeout(calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
      pendingRevokes.add(f);
      f.whenComplete((r, t) -> {
        pendingRevokes.remove(f);
        if (t != null) {
          log.debug("revoking etcd lease {} failed (it expires by its TTL): {}", leaseId,
              t.toString());
        }
      });
    } catch (RuntimeException e) {
      log.debug("revoking etcd lease {} failed (it expires by its TTL): {}", leaseId, e.toString());
    }
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this EtcdLeaseStore is closed; open a new store");
    }
  }

  private static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  static List<URI> parseEndpoints(List<String> endpoints) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("at least one etcd endpoint is required, e.g."
          + " \"http://127.0.0.1:2379\"");
    }
    List<URI> uris = new ArrayList<>();
    for (String e : endpoints) {
      Objects.requireNonNull(e, "an endpoint must not be null");
      URI uri;
      try {
        uri = URI.create(e.trim());
      } catch (IllegalArgumentException ex) {
        throw new IllegalArgumentException("etcd endpoint '" + e + "' is not a URI; use"
            + " \"http://host:port\"", ex);
      }
      if ("https".equalsIgnoreCase(uri.getScheme())) {
        throw new IllegalArgumentException("etcd endpoint '" + e + "' uses TLS: build a jetcd Client"
            + " with sslContext(...) and use EtcdLeaseStore.builder(Client)");
      }
      if (!"http".equalsIgnoreCase(uri.getScheme()) || uri.getHost() == null || uri.getPort() <= 0
          || (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/"))
          || uri.getQuery() != null || uri.getUserInfo() != null) {
        throw new IllegalArgumentException("etcd endpoint '" + e + "' must look like"
            + " \"http://host:port\" (no path, query or credentials)");
      }
      uris.add(uri);
    }
    return uris;
  }

  /** Configures an {@link EtcdLeaseStore}; {@link #build()} validates everything up front. */
  public static final class Builder {
    private final ClientSettings settings;

    private Builder(ClientSettings settings) {
      this.settings = settings;
    }

    /**
     * The prefix of every key this store writes (default {@value #DEFAULT_KEY_PREFIX}): 1 to 64
     * characters from {@code A-Z a-z 0-9 . _ -} in {@code /}-separated segments. Stores that must
     * not see each other's leases use different prefixes.
     */
    public Builder keyPrefix(String keyPrefix) {
      settings.keyPrefix(keyPrefix);
      return this;
    }

    /** The longest one operation may take, retries included (default 5 s). */
    public Builder callTimeout(Duration callTimeout) {
      settings.callTimeout(callTimeout);
      return this;
    }

    public EtcdLeaseStore build() {
      return new EtcdLeaseStore(settings.open());
    }
  }
}
