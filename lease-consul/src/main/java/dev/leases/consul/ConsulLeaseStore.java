package dev.leases.consul;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.ConsulException;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.SessionClient;
import org.kiwiproject.consul.async.ConsulResponseCallback;
import org.kiwiproject.consul.model.ConsulResponse;
import org.kiwiproject.consul.model.kv.ImmutableOperation;
import org.kiwiproject.consul.model.kv.Operation;
import org.kiwiproject.consul.model.kv.TxResponse;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.model.kv.Verb;
import org.kiwiproject.consul.model.session.SessionInfo;
import org.kiwiproject.consul.option.QueryOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases on Consul: one session per holder tenure, locking one KV key per lease, through the
 * kiwiproject {@code consul-client}.
 *
 * <h2>How a lease maps onto Consul</h2>
 * <ul>
 *   <li><b>Acquire</b> creates a session ({@code TTL} = the lease TTL in whole seconds,
 *       {@code LockDelay 0s}, {@code Behavior release}, {@code Name} = the holder id, and — for
 *       stores built from a URL — no node health checks; see {@link #builder(Consul)} for the
 *       caveat) and locks the key in one transaction: {@code check-not-exists} (or
 *       {@code delete-cas} of the unlocked key at the index just read) followed by {@code lock}. The key is therefore
 *       created afresh by every new tenure. A lost race rolls the transaction back; the session is
 *       destroyed and the call returns empty.
 *   <li><b>Renew</b> renews the session (Consul answers the session's TTL, which the grant reports)
 *       and then, in one transaction, {@code check-session} + {@code lock} with the same session,
 *       which rewrites the key's value (the renewal stamp) without changing its lock.
 *   <li><b>Release</b> is one transaction, {@code check-session} + {@code unlock}, leaving the key
 *       with a "released" record; then the session is destroyed.
 *   <li>The lock key is never written by a plain PUT: every write is a {@code lock} or
 *       {@code unlock} that carries the tenure's session, guarded in the same transaction.
 *   <li>{@code Behavior release}, not {@code delete}: when Consul invalidates a session it only
 *       unlocks the key, which keeps the tenure's token ({@code CreateIndex}) and record as
 *       evidence, so that an expired lease reads as EXPIRED (not FREE) and {@link #token} still
 *       answers.
 * </ul>
 *
 * <h2>Fencing token: the key's {@code CreateIndex}</h2>
 * The token is the Raft index at which the tenure's transaction created the key. Raft indexes grow
 * with every write to the cluster and are persisted with its data, so the token is larger than any
 * earlier token of any lease: after a release, after an expiry, after an operator deleted the key
 * (a delete is itself a Raft write) and across a restart of servers that keep their data directory.
 * Renewals rewrite the key but never recreate it, so the token stays the same for the whole tenure;
 * a plain PUT by someone else does not change it either. {@code LockIndex} was not chosen: it starts
 * again at 1 when the key is deleted, and a plain PUT resets it to 0. {@code ModifyIndex} was not
 * chosen: it moves with every renewal.
 * <br>When the key is absent (deleted out of band, or never created), {@link #token} and
 * {@link #inspect} answer the {@code X-Consul-Index} of the KV read instead: for an absent key Consul
 * reports the highest index of its whole KV table (entries and delete tombstones), which is at
 * least every {@code CreateIndex} so far, since creating a key raised it; and the next key Consul
 * creates gets a later Raft index, larger still. A store-wide bound, as {@link LeaseStore#token}
 * allows: never lower than a token already issued, always lower than the next grant.
 * <br>Limits: a {@code -dev} agent keeps its data in memory and starts again from index 1, and
 * restoring an older snapshot rewinds the indexes: tokens can then go backwards. Run real servers.
 *
 * <h2>Key value and inspection</h2>
 * The key {@link #keyOf(String)} holds a small text record (see {@code LeaseRecord}): state
 * ({@code held}/{@code released}), holder, session, granted TTL and the holder's wall-clock time
 * when it sent the acquire or latest renewal. {@link #inspect(String)} reads the key and, when it is
 * locked, the session:
 * <ul>
 *   <li>HELD: the key is locked by a live session. The holder is the session's name. Consul exposes
 *       neither a clock nor a session deadline, so {@code expiresAt}/{@code remaining} are an
 *       estimate: the stamp plus the TTL, against this machine's wall clock, at most one TTL away.
 *       After that point Consul may keep the session for up to one more TTL (it invalidates
 *       {@code 2 x TTL} after the last renewal it saw); until it does the lease stays HELD, with
 *       {@code remaining} counting to that later bound. Which state a lease is in is never decided
 *       by a clock: only by Consul's session.
 *   <li>EXPIRED: the key is unlocked but its record says "held" — Consul invalidated the session
 *       (TTL) and released the lock, and nobody has taken it. {@code expiredAt} is the stamp plus
 *       the TTL (an estimate, as above).
 *   <li>FREE: released ({@code lastToken} the last tenure's token), or no key (never granted, or
 *       deleted out of band; {@code lastToken} the KV table's index, see above).
 * </ul>
 *
 * <h2>Guarantees and limits</h2>
 * <ul>
 *   <li>Expiry is judged by Consul alone (the session TTL on the Raft leader).
 *   <li><b>Failover bound:</b> a dead holder's lease may last up to {@code 2 x TTL} after its last
 *       renewal — Consul may wait that long before invalidating the session. A clean release hands
 *       over at once: followers hear it through a blocking query ({@link #onRelease}).
 *   <li><b>Minimum TTL</b> is the server's {@code session_ttl_min}: 10 s unless configured
 *       otherwise. {@link #TTL_RANGE} declares 1 s (the lowest value Consul can be configured with);
 *       a server that refuses a TTL makes the call throw {@link IllegalArgumentException} saying so.
 *   <li>Every call is bounded by the call timeout (all the HTTP requests it makes, together); after
 *       it, or on an I/O error or an error status, the call throws
 *       {@link LeaseStoreUnavailableException} and its outcome is unknown. On a store built from a
 *       URL the request in flight is cancelled at the deadline and nothing more is sent; on your
 *       client it runs until your client's timeouts (no further write starts). A request that was
 *       already sent may still land; if it was an acquire, a later call by the same holder on the
 *       same store renews that tenure.
 *   <li>Calls run on at most {@link Builder#maxConcurrentCalls(int)} threads of the store's own,
 *       with at most four times as many waiting; a call beyond that fails at once with
 *       {@link LeaseStoreUnavailableException}. A slow or silent agent therefore costs a fixed
 *       number of threads, however many calls time out.
 *   <li>Renewing keeps the tenure's session, whose TTL Consul fixed when it was created: a renewal
 *       asking for another TTL gets the session's TTL, which the grant reports.
 *   <li>Reads use Consul's default consistency (answered by the leader). Decisions never rest on a
 *       read alone: every write is guarded inside its transaction.
 * </ul>
 *
 * <h2>Races, stated plainly</h2>
 * <ul>
 *   <li>Contenders for a free lease: each creates a session; Consul applies one transaction and
 *       rolls the others back, whose callers get empty (their sessions are destroyed).
 *   <li>A renewal that times out has an unknown outcome and the holder must act as if it failed.
 *       If it lands late it only extends the holder's own session: its lock step is guarded by
 *       {@code check-session}, so it can never take the lease from a newer holder.
 *   <li>Release against invalidation: whichever Consul applies first wins; a release that comes
 *       second returns false.
 *   <li>An operator who deletes a held key lets the next contender in at once, while the old
 *       holder believes it leads until its next renewal (which then fails its
 *       {@code check-session} and starts a new tenure if the key is free). The new holder's token
 *       is larger: a fenced resource rejects the old one meanwhile.
 *   <li>{@link #inspect} and the release hints describe a moment that has passed by the time the
 *       caller acts on them.
 * </ul>
 *
 * <p>Thread-safe. Calls after {@link #close()} throw {@link LeaseStoreClosedException}; closing
 * releases nothing (leases expire) and destroys the Consul client only if the store created it.
 */
public final class ConsulLeaseStore implements LeaseStore {

  /**
   * TTLs from 1 s to 24 h in whole seconds (Consul's {@code session_ttl_min} floor and its maximum
   * session TTL). Servers refuse TTLs below their {@code session_ttl_min}, 10 s by default.
   */
  public static final TtlRange TTL_RANGE =
      new TtlRange(Duration.ofSeconds(1), Duration.ofHours(24), Duration.ofSeconds(1));

  /** Key prefix used unless {@link Builder#keyPrefix(String)} says otherwise. */
  public static final String DEFAULT_KEY_PREFIX = "leases";

  /** Bound on each call unless {@link Builder#callTimeout(Duration)} says otherwise. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(2);

  /** Longest accepted call timeout. */
  public static final Duration MAX_CALL_TIMEOUT = Duration.ofMinutes(5);

  /** Threads for calls unless {@link Builder#maxConcurrentCalls(int)} says otherwise. */
  public static final int DEFAULT_MAX_CONCURRENT_CALLS = ConsulCalls.DEFAULT_MAX_THREADS;

  private static final Logger log = LoggerFactory.getLogger(ConsulLeaseStore.class);
  private static final Duration UNKNOWN_REMAINING = Duration.ofSeconds(1);

  private final Consul consul;
  private final boolean ownsClient;
  private final KeyValueClient kv;
  private final SessionClient sessions;
  private final SessionCreator sessionCreator;
  private final KeyLayout keys;
  private final ConsulCalls calls;
  private final Map<Tenant, Tenure> tenures = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Object watchLock = new Object();
  private ReleaseWatches watches; // guarded by watchLock

  /** A holder's claim on one lease name. */
  private record Tenant(String name, HolderId holder) {}

  /** The session this store created (or adopted) for a tenant's current tenure. */
  private record Tenure(String session, Duration ttl) {}

  private ConsulLeaseStore(Builder b, Consul consul, boolean ownsClient,
      SessionCreator sessionCreator) {
    this.consul = consul;
    this.ownsClient = ownsClient;
    this.kv = consul.keyValueClient();
    this.sessions = consul.sessionClient();
    this.sessionCreator = sessionCreator != null ? sessionCreator : SessionCreator.through(sessions);
    this.keys = new KeyLayout(b.options.keyPrefix);
    this.calls = b.options.calls();
  }

  /**
   * A store that creates and owns its Consul client (HTTP, or HTTPS with the JVM's trust store; an
   * ACL token with {@link Builder#aclToken(String)}) and destroys it on {@link #close()}. Its
   * sessions end by their TTL only. Recommended.
   *
   * @param url the agent's HTTP address, e.g. {@code http://127.0.0.1:8500}
   */
  public static Builder builder(String url) {
    return new Builder(ClientOptions.forUrl(url));
  }

  /**
   * A store on your client (for TLS settings, failover between agents...), which stays yours:
   * {@link #close()} does not destroy it. Each call is still bounded by
   * {@link Builder#callTimeout(Duration)}, but an abandoned HTTP request goes on until your
   * client's own read timeout.
   *
   * <p>Caveat: the kiwiproject client cannot send an empty check list, so Consul gives these
   * sessions the agent's {@code serfHealth} check. Besides its TTL, a session then also ends when
   * that agent's node is judged failed — possibly before the TTL, while its holder still believes it
   * leads (until its next renewal fails). Fencing tokens still reject that holder's writes; use
   * {@link #builder(String)} for sessions that only a TTL ends.
   */
  public static Builder builder(Consul client) {
    return new Builder(ClientOptions.forClient(client));
  }

  /** Builds a {@link ConsulLeaseStore}; nothing is sent to Consul until the first call. */
  public static final class Builder {
    final ClientOptions options;

    Builder(ClientOptions options) {
      this.options = options;
    }

    /**
     * The KV path under which lease keys live ({@code <prefix>/<encoded name>}); default
     * {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}. 1 to 64 characters from
     * {@code A-Z a-z 0-9 . _ - /}, as {@code /}-separated segments, none empty, {@code .} or
     * {@code ..}. Stores that must see the same leases use the same prefix.
     */
    public Builder keyPrefix(String keyPrefix) {
      options.keyPrefix(keyPrefix);
      return this;
    }

    /**
     * The bound on every call, all of its HTTP requests together; default 2 s, at most 5 min. Keep it
     * well below the TTLs you use, so that a holder learns of trouble while its lease still runs.
     */
    public Builder callTimeout(Duration callTimeout) {
      options.callTimeout(callTimeout);
      return this;
    }

    /**
     * How many calls may run at once, each on a thread of the store's own; default
     * {@value ConsulLeaseStore#DEFAULT_MAX_CONCURRENT_CALLS}, at most 256. Up to four times as many
     * calls wait for a thread (within their timeout); more fail at once with
     * {@link LeaseStoreUnavailableException}. This is what bounds the threads a slow agent can tie
     * up.
     */
    public Builder maxConcurrentCalls(int maxConcurrentCalls) {
      options.maxConcurrentCalls(maxConcurrentCalls);
      return this;
    }

    /**
     * The ACL token sent with every request ({@code X-Consul-Token}); it needs {@code key:write} on
     * the prefix and {@code session:write} on the agent's node. Only for stores built from a URL:
     * configure your own client's token on that client.
     */
    public Builder aclToken(String aclToken) {
      options.aclToken(aclToken, "store");
      return this;
    }

    public ConsulLeaseStore build() {
      if (options.client != null) {
        return new ConsulLeaseStore(this, options.client, false, null);
      }
      OwnedClient owned = OwnedClient.open(options.url, options.callTimeout, options.aclToken);
      return new ConsulLeaseStore(this, owned.consul(), true,
          SessionCreator.direct(owned.direct(), options.url, options.aclToken));
    }
  }

  /** The KV key that holds lease {@code name}: {@code <prefix>/<escaped name>}; see the class comment. */
  public String keyOf(String name) {
    return keys.keyOf(name);
  }

  /** This store's key prefix. */
  public String keyPrefix() {
    return keys.prefix();
  }

  /**
   * Acquires or renews. A holder with a live tenure on this store (or whose session, named after
   * it, holds the key) renews: same token, the session's TTL. Otherwise, if the key is unlocked or
   * absent, a new tenure starts with a new session and a larger token; if another session holds
   * the key, the answer is empty without any write.
   *
   * <p>Races: two contenders for a free lease both create a session; Consul applies one
   * transaction and rolls the other back (that caller gets empty). The grant's
   * {@code expiresAt} is the time this call was sent plus the TTL, on this machine's wall clock.
   *
   * @throws IllegalArgumentException also when the server refuses the TTL (below its
   *     {@code session_ttl_min})
   */
  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    TTL_RANGE.check(ttl);
    ensureOpen();
    Duration rounded = TTL_RANGE.roundUp(ttl);
    return calls.run("acquireOrRenew('" + name + "')",
        () -> doAcquireOrRenew(new Tenant(name, holder), rounded));
  }

  private Optional<LeaseGrant> doAcquireOrRenew(Tenant t, Duration ttl) {
    String key = keys.keyOf(t.name());
    Tenure mine = tenures.get(t);
    if (mine != null) {
      Optional<LeaseGrant> renewed = renew(t, key, mine);
      if (renewed.isPresent()) {
        return renewed;
      }
    }
    Optional<Value> current = kv.getValue(key);
    Optional<String> lockedBy = current.flatMap(ConsulLeaseStore::sessionOf);
    if (lockedBy.isPresent()) {
      String session = lockedBy.get();
      if (mine == null || !session.equals(mine.session())) {
        Optional<Tenure> adopted = adoptable(session, current.get(), t.holder(), ttl);
        if (adopted.isPresent()) {
          tenures.put(t, adopted.get());
          return renew(t, key, adopted.get());
        }
      }
      return Optional.empty();
    }
    return startTenure(t, key, current, ttl);
  }

  /** Renews {@code tenure}'s session, then restamps the key if that session still locks it. */
  private Optional<LeaseGrant> renew(Tenant t, String key, Tenure tenure) {
    long sent = System.currentTimeMillis();
    Optional<SessionInfo> info;
    try {
      info = sessions.renewSession(tenure.session());
    } catch (ConsulException e) {
      if (e.getCode() != 404) {
        throw e;
      }
      info = Optional.empty();
    }
    if (info.isEmpty()) { // invalidated: the tenure is over
      tenures.remove(t, tenure);
      return Optional.empty();
    }
    Duration granted = info.get().getTtl().flatMap(GoDuration::parse).orElse(tenure.ttl());
    LeaseRecord record =
        new LeaseRecord(LeaseRecord.State.HELD, t.holder(), tenure.session(), granted, sent);
    Optional<Value> locked = transact(checkSession(key, tenure.session()),
        lock(key, tenure.session(), record));
    if (locked.isEmpty()) { // the key was deleted or is locked by another session
      tenures.remove(t, tenure);
      destroyQuietly(tenure.session());
      return Optional.empty();
    }
    if (!granted.equals(tenure.ttl())) {
      tenures.replace(t, tenure, new Tenure(tenure.session(), granted));
    }
    return Optional.of(grant(t, locked.get().getCreateIndex(), sent, granted));
  }

  /** A new session and, in one transaction, a freshly created key locked by it. */
  private Optional<LeaseGrant> startTenure(Tenant t, String key, Optional<Value> current,
      Duration ttl) {
    Tenure stale = tenures.remove(t);
    if (stale != null) {
      destroyQuietly(stale.session());
    }
    ConsulCalls.ensureLive(); // an abandoned acquire must not start a tenure
    long sent = System.currentTimeMillis();
    String session = sessionCreator.create(t.holder(), ttl);
    Tenure tenure = new Tenure(session, ttl);
    // Remembered before the transaction: if its outcome is unknown, a retry renews this tenure.
    tenures.put(t, tenure);
    Operation guard = current.isPresent()
        ? Operation.builder(Verb.DELETE_CHECK_AND_SET).key(key)
            .index(BigInteger.valueOf(current.get().getModifyIndex())).build()
        : ImmutableOperation.builder().verb("check-not-exists").key(key).build();
    LeaseRecord record = new LeaseRecord(LeaseRecord.State.HELD, t.holder(), session, ttl, sent);
    Optional<Value> locked = transact(guard, lock(key, session, record));
    if (locked.isEmpty()) { // someone else changed the key since we read it
      tenures.remove(t, tenure);
      destroyQuietly(session);
      return Optional.empty();
    }
    return Optional.of(grant(t, locked.get().getCreateIndex(), sent, ttl));
  }

  /**
   * Whether the session locking the key belongs to {@code holder}, created by another store of the
   * same holder: the record names the holder and the session, named at creation, confirms it.
   */
  private Optional<Tenure> adoptable(String session, Value current, HolderId holder,
      Duration ttl) {
    LeaseRecord record = recordOf(current);
    if (record == null || !record.holder().equals(holder)) {
      return Optional.empty();
    }
    return sessions.getSessionInfo(session)
        .filter(info -> info.getName().filter(holder.value()::equals).isPresent())
        .map(info -> new Tenure(session, info.getTtl().flatMap(GoDuration::parse).orElse(ttl)));
  }

  /**
   * Releases in one transaction ({@code check-session} + {@code unlock}, leaving a "released"
   * record that keeps the token), then destroys the session. Followers' blocking queries return
   * at once. False when the holder's session no longer locks the key (expired, taken, deleted).
   */
  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    return calls.run("release('" + name + "')", () -> doRelease(new Tenant(name, holder)));
  }

  private boolean doRelease(Tenant t) {
    String key = keys.keyOf(t.name());
    Tenure tenure = tenures.get(t);
    if (tenure == null) {
      Optional<Value> current = kv.getValue(key);
      Optional<String> lockedBy = current.flatMap(ConsulLeaseStore::sessionOf);
      if (lockedBy.isEmpty()) {
        return false;
      }
      Optional<Tenure> adopted =
          adoptable(lockedBy.get(), current.get(), t.holder(), TTL_RANGE.min());
      if (adopted.isEmpty()) {
        return false;
      }
      tenure = adopted.get();
    }
    LeaseRecord record = new LeaseRecord(LeaseRecord.State.RELEASED, t.holder(), tenure.session(),
        tenure.ttl(), System.currentTimeMillis());
    Optional<Value> unlocked = transact(checkSession(key, tenure.session()),
        Operation.builder(Verb.UNLOCK).key(key).session(tenure.session()).value(record.encode())
            .build());
    tenures.remove(t, tenure);
    destroyQuietly(tenure.session());
    return unlocked.isPresent();
  }

  /**
   * The key's {@code CreateIndex}: the token of the latest tenure, kept through release and expiry.
   * When there is no key (never granted, or deleted out of band), the {@code X-Consul-Index} of the
   * read: at least every token issued so far, below the next grant (see the class comment).
   */
  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return calls.run("token('" + name + "')", () -> {
      String key = keys.keyOf(name);
      Optional<Value> current = kv.getValue(key);
      return OptionalLong.of(current.isPresent() ? current.get().getCreateIndex()
          : readWithIndex(key).token());
    });
  }

  /** A read of a key and the {@code X-Consul-Index} Consul answered with it. */
  private record KeyRead(Optional<Value> value, long index) {
    /** The key's {@code CreateIndex}, or for an absent key the KV table's index. */
    long token() {
      return value.map(Value::getCreateIndex).orElse(index);
    }
  }

  /**
   * Reads {@code key} keeping the response's index, which the kiwiproject client drops from
   * synchronous reads of absent keys; asynchronous, so it runs on the client's dispatcher while
   * this call's thread waits at most the call's remaining time.
   */
  private KeyRead readWithIndex(String key) throws InterruptedException {
    CompletableFuture<ConsulResponse<Optional<Value>>> answer = new CompletableFuture<>();
    kv.getValue(key, QueryOptions.BLANK, new ConsulResponseCallback<>() {
      @Override
      public void onComplete(ConsulResponse<Optional<Value>> response) {
        answer.complete(response);
      }

      @Override
      public void onFailure(Throwable failure) {
        answer.completeExceptionally(failure);
      }
    });
    ConsulResponse<Optional<Value>> r;
    try {
      r = answer.get(Math.max(1, ConsulCalls.remainingNanos()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new LeaseStoreUnavailableException("read of " + key + ": " + calls.target()
          + " did not answer within " + calls.timeout(), e);
    } catch (ExecutionException e) {
      throw new ConsulException("read of " + key + " failed", e.getCause());
    }
    Optional<Value> value = r.getResponse() == null ? Optional.empty() : r.getResponse();
    BigInteger index = r.getIndex();
    if (value.isEmpty() && (index == null || index.signum() <= 0 || index.bitLength() > 63)) {
      throw new LeaseStoreUnavailableException("read of absent key " + key + ": " + calls.target()
          + " answered without a usable X-Consul-Index (" + index + "); try again", null);
    }
    return new KeyRead(value, index == null ? 0 : index.longValue());
  }

  /** Reads the key, and the session that locks it if any; see the class comment for the states. */
  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return calls.run("inspect('" + name + "')", () -> doInspect(name));
  }

  private LeaseState doInspect(String name) throws InterruptedException {
    String key = keys.keyOf(name);
    for (int attempt = 0; attempt < 3; attempt++) {
      Optional<Value> current = kv.getValue(key);
      if (current.isEmpty()) {
        KeyRead again = readWithIndex(key);
        if (again.value().isEmpty()) {
          return new LeaseState.Free(name, again.index());
        }
        current = again.value(); // created since the first read
      }
      Value v = current.get();
      long token = v.getCreateIndex();
      LeaseRecord record = recordOf(v);
      Optional<String> lockedBy = sessionOf(v);
      if (lockedBy.isEmpty()) {
        if (record != null && record.state() == LeaseRecord.State.HELD) {
          return new LeaseState.Expired(name, record.holder(), token,
              Instant.ofEpochMilli(record.stampMillis()).plus(record.ttl()));
        }
        return new LeaseState.Free(name, token);
      }
      String session = lockedBy.get();
      Optional<SessionInfo> info = sessions.getSessionInfo(session);
      if (info.isEmpty()) {
        continue; // the session ended between the two reads; Consul has unlocked the key by now
      }
      boolean ours = record != null && record.session().equals(session);
      HolderId holder = holderOf(info.get(), ours ? record : null, session);
      Duration ttl = info.get().getTtl().flatMap(GoDuration::parse)
          .orElse(ours ? record.ttl() : null);
      long now = System.currentTimeMillis();
      Duration remaining = remaining(ours ? record.stampMillis() : null, ttl, now);
      return new LeaseState.Held(name, holder, token, Instant.ofEpochMilli(now).plus(remaining),
          remaining);
    }
    throw new LeaseStoreUnavailableException("inspect('" + name + "'): key " + key + " stayed"
        + " locked by sessions that Consul does not know; try again", null);
  }

  /**
   * Until the stamp plus the TTL; once that has passed (Consul keeps the session up to 2 x TTL),
   * until the stamp plus 2 x TTL; past that, one second ("not yet invalidated: look again").
   * Never more than the TTL.
   */
  static Duration remaining(Long stampMillis, Duration ttl, long nowMillis) {
    if (ttl == null) {
      return UNKNOWN_REMAINING;
    }
    long ttlMs = ttl.toMillis();
    if (stampMillis == null) {
      return ttl;
    }
    long promised = stampMillis + ttlMs;
    long latest = stampMillis + 2 * ttlMs;
    long end = promised > nowMillis ? promised
        : latest > nowMillis ? latest : nowMillis + UNKNOWN_REMAINING.toMillis();
    return Duration.ofMillis(Math.max(1, Math.min(end - nowMillis, ttlMs)));
  }

  private static HolderId holderOf(SessionInfo info, LeaseRecord record, String session) {
    Optional<String> named = info.getName();
    if (named.isPresent()) {
      try {
        return new HolderId(named.get());
      } catch (IllegalArgumentException e) {
        // a session made by something else, with a name that is not a holder id
      }
    }
    return record != null ? record.holder() : new HolderId("consul-session:" + session);
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  /**
   * Runs {@code listener} when {@code name}'s key is seen unlocked after being locked (a release, a
   * session invalidated by Consul, an out-of-band delete), watched with a blocking query per name.
   * It runs on the Consul client's HTTP callback thread and must return quickly.
   *
   * <p>Races, stated plainly: the hint says the lease <em>was</em> free a moment ago; another
   * contender may have taken it by the time the listener runs. Hints can be lost (while the agent is
   * unreachable); keep polling until the expiry you last read.
   */
  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    ensureOpen();
    ReleaseWatches w;
    synchronized (watchLock) {
      ensureOpen();
      if (watches == null) {
        watches = new ReleaseWatches(kv, keys);
      }
      w = watches;
    }
    return w.subscribe(name, listener);
  }

  /** How many lease names have a release watch now (for tests). */
  int watchedNames() {
    synchronized (watchLock) {
      return watches == null ? 0 : watches.size();
    }
  }

  /** Stops the release watches and, if this store created its client, destroys it. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (watchLock) {
      if (watches != null) {
        watches.close();
      }
    }
    calls.close();
    if (ownsClient) {
      consul.destroy(); // also cancels the watches' blocking queries in flight
    }
  }

  @Override
  public String toString() {
    return "ConsulLeaseStore[" + calls.target() + ", prefix=" + keys.prefix() + "]";
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this ConsulLeaseStore is closed");
    }
  }

  /**
   * Runs a transaction; the KV entry of its last operation, or empty when Consul rolled it back
   * because a guard failed or the lock is held by another session (or in its lock delay).
   */
  private Optional<Value> transact(Operation... ops) {
    Optional<TxResponse> answered = ConsulTxn.perform(kv, ops);
    if (answered.isEmpty()) {
      return Optional.empty();
    }
    TxResponse response = answered.get();
    List<Map<String, Value>> results = response.results();
    Value last = results.isEmpty() ? null : results.get(results.size() - 1).get("KV");
    if (last == null) {
      throw new LeaseStoreUnavailableException("Consul answered a lock transaction without the"
          + " locked entry: " + response, null);
    }
    return Optional.of(last);
  }

  private static Operation checkSession(String key, String session) {
    return Operation.builder(Verb.CHECK_SESSION).key(key).session(session).build();
  }

  private static Operation lock(String key, String session, LeaseRecord record) {
    return Operation.builder(Verb.LOCK).key(key).session(session).value(record.encode()).build();
  }

  private LeaseGrant grant(Tenant t, long token, long sentMillis, Duration ttl) {
    return new LeaseGrant(t.name(), t.holder(), token, Instant.ofEpochMilli(sentMillis).plus(ttl),
        ttl);
  }

  private void destroyQuietly(String session) {
    try {
      sessions.destroySession(session);
    } catch (RuntimeException e) {
      log.debug("destroying session {} failed; it ends by its TTL: {}", session, e.toString());
    }
  }

  private static Optional<String> sessionOf(Value v) {
    return v.getSession().filter(s -> !s.isEmpty());
  }

  private static LeaseRecord recordOf(Value v) {
    return LeaseRecord.parse(v.getValueAsString(StandardCharsets.UTF_8).orElse(null));
  }
}
