package dev.leases.consul;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseListing;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
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
 * Leases on Consul: one session per (store, holder, TTL), shared by every name that holder
 * acquires through this store with that TTL, locking one KV key per lease, through the kiwiproject
 * {@code consul-client}.
 *
 * <h2>How a lease maps onto Consul</h2>
 * <ul>
 *   <li><b>The shared session</b> ({@code TTL} = the lease TTL in whole seconds, {@code LockDelay
 *       0s}, {@code Behavior release}, {@code Name} = the holder id, and — for stores built from a
 *       URL — no node health checks; see {@link #builder(Consul)} for the caveat) is created by the
 *       holder's first new tenure and again whenever Consul no longer knows it. When the last
 *       name on it is released it <em>lingers</em>, locking nothing and renewed by nobody, so that
 *       the holder's next new tenure starts on it in one round trip instead of creating a session
 *       first; a new tenure uses it only while by its last answered renewal (or its creation) at
 *       least half its TTL is left. A lingering session is destroyed once it is older than that
 *       (by the next call that would use it, or any call of the store at most a second later:
 *       it is then replaced), and on {@link #close()}; otherwise Consul invalidates it by its TTL.
 *       A released name is FREE at once: its key is unlocked, whatever the session does. A session
 *       that no name was ever granted on (a new tenure that needed it lost its race) is destroyed
 *       at once. A session that still carries names when the store closes is left to expire, so
 *       that closing never ends a lease earlier than the holder was promised.
 *   <li><b>Acquire</b> locks the key with the shared session in one transaction that creates the
 *       key afresh, so every new tenure gets a new {@code CreateIndex}: without a read first,
 *       {@code lock} (which rolls back if another session locks the key), {@code delete},
 *       {@code lock}; after a read, {@code check-not-exists} or {@code delete-cas} of the unlocked
 *       key at the index read, then {@code lock}. Locking a key does not extend a session, so the
 *       call also renews the session (or reuses a renewal sent after it started) and the grant
 *       lasts the TTL from when that renewal was sent. On an existing session the renewal and the
 *       transaction are sent in parallel (see {@code startTenure} for why that is sound), so a new
 *       tenure costs one round trip. A holder with a session tries a name it does not hold
 *       without reading it first; when that transaction rolls back (another session locks the
 *       key, or a race was lost), a read of the key settles the call.
 *   <li><b>Renew</b> renews the session — one request for every renewal of this store that started
 *       before it was sent, so concurrent renewals of one holder's names share it — and then, in
 *       one transaction, {@code check-session} + {@code lock} with the same session, which
 *       rewrites the key's value (the renewal stamp) without changing its lock. The check comes
 *       after the renewal: a key deleted and then locked by another session is never reported as
 *       renewed. That makes a renewal two round trips, and Consul offers no one-request form: a
 *       session is extended only by {@code PUT /v1/session/renew}, which resets a timer on the
 *       leader (outside Raft) and takes no condition, while the transaction API's only session
 *       operation is {@code delete} and a {@code lock} does not extend the session; sent in
 *       parallel, the check could be applied before the renewal, and a key taken by another
 *       holder between the two would be reported renewed.
 *   <li><b>Release</b> is one transaction, {@code check-session} + {@code unlock}, leaving the key
 *       with a "released" record.
 *   <li><b>Batches</b> ({@link #acquireOrRenewAll}, {@link #releaseAll}) renew each session once,
 *       read every key in one request and write in transactions of 32 names; see there.
 *   <li>The lock key is never written by a plain PUT: every write is a {@code lock} or
 *       {@code unlock} that carries the tenure's session, guarded in the same transaction.
 *   <li>{@code Behavior release}, not {@code delete}: when Consul invalidates a session it only
 *       unlocks the keys, which keeps each tenure's token ({@code CreateIndex}) and record as
 *       evidence, so that an expired lease reads as EXPIRED (not FREE) and {@link #token} still
 *       answers.
 * </ul>
 *
 * <h2>Shared fate</h2>
 * Every name a holder holds through this store with one TTL rides on one session. When Consul
 * invalidates it (no renewal for up to 2 x TTL) or someone destroys it, <em>every</em> name on it
 * is lost at once: Consul unlocks all their keys together, and the next grant of each is a new
 * tenure with a larger token. Conversely, renewing any one of those names keeps all of them alive
 * on Consul's side: release the names you no longer want rather than just stop renewing them.
 * Each grant's own deadline is still that of the call that granted it.
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
 *       by a clock: only by Consul's session. The stamp is the last single call's: renewals by
 *       batch ({@link #acquireOrRenewAll}) do not rewrite keys, so a name renewed only by batches
 *       (a {@code LeaseGroup}'s) soon reads as overdue, {@code remaining} one second ("look
 *       again"), while it is HELD. Not fixed on purpose: a stamp per session written each batch
 *       round would turn the round's read into a Raft write and end every prefix release watch
 *       (see {@link #onRelease}) once per round with a full listing; followers should rely on the
 *       release hints rather than on that estimate.
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
 *   <li>A batch is bounded by one call timeout for its reads and one more per
 *       {@value #NAMES_PER_CALL_TIMEOUT} names (started): 4 s for 250 names at the default 2 s.
 *       Unlike a single call, a batch that loses races has several steps in a row (read, a wave
 *       of transactions, a read of the names lost, a second wave, the sessions of their holders);
 *       bounded by one call timeout, four holders' batches of the same 250 names on a TLS agent
 *       timed out on a loaded 2-core machine (1.2 s each when idle and first in the JVM).
 *       What batches cost: a batch of 10,000 new names writes 313 transactions,
 *       {@value #PARALLEL_TXNS} at a time; measured on a 2-core machine against a local agent,
 *       about 0.4 s idle and 1 to 3 s with the cores oversubscribed (a cold JVM's first batch pays
 *       more); renewing them is one session renewal and one read, 0.1 to 0.7 s. A
 *       {@code LeaseGroup} waits TTL/3 for each batch: if its first round overruns that, the group
 *       hears none of its grants, but the tenures that batch committed stay with this store and
 *       the next round renews them, so the group holds every name after a few rounds rather than
 *       never. Stores built from a URL send request bodies with {@code TCP_NODELAY}; on a client
 *       of your own (the kiwiproject builder offers no way to configure its sockets) each
 *       transaction of a batch waits about 40 ms for the agent's delayed ACK, and a 10,000-name
 *       batch takes at least 1.6 s.
 *   <li>Reads use Consul's default consistency (answered by the leader). Decisions never rest on a
 *       read alone: every write is guarded inside its transaction.
 * </ul>
 *
 * <h2>Races, stated plainly</h2>
 * <ul>
 *   <li>Contenders for a free lease: each sends its transaction on its holder's session; Consul
 *       applies one and rolls the others back, whose callers get empty.
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
 * releases nothing (leases expire; sessions left without names are destroyed) and destroys the
 * Consul client only if the store created it.
 */
public final class ConsulLeaseStore implements LeaseStore, LeaseListing {

  /**
   * TTLs from 1 s to 24 h in whole seconds (Consul's {@code session_ttl_min} floor and its maximum
   * session TTL). Servers refuse TTLs below their {@code session_ttl_min}, 10 s by default.
   */
  public static final TtlRange TTL_RANGE =
      new TtlRange(Duration.ofSeconds(1), Duration.ofHours(24), Duration.ofSeconds(1));

  /** Key prefix used unless {@link Builder#keyPrefix(String)} says otherwise. */
  public static final String DEFAULT_KEY_PREFIX = "leases";

  /** A batch is bounded by one call timeout for its reads and one more per this many names. */
  static final int NAMES_PER_CALL_TIMEOUT = 1_000;

  /** Transactions a batch has in flight at once. */
  static final int PARALLEL_TXNS = 8;

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
  private final int watchWaitSeconds;
  private final ConsulCalls calls;
  private final Map<Tenant, Tenure> tenures = new ConcurrentHashMap<>();
  private final Map<SessionKey, Session> shared = new ConcurrentHashMap<>();
  private final Object creating = new Object();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Object watchLock = new Object();
  /** When {@link #retireIfStale} next looks at every session ({@link System#nanoTime}). */
  private final AtomicLong nextSweepNanos = new AtomicLong(System.nanoTime());
  private static final long SWEEP_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);
  private @Nullable ReleaseWatches watches; // guarded by watchLock

  /** A holder's claim on one lease name. */
  private record Tenant(String name, HolderId holder) {}

  /** What a shared session is for: one holder, one TTL (as asked, rounded up). */
  private record SessionKey(HolderId holder, Duration ttl) {}

  /**
   * A tenant's current tenure: the session locking its key and the key's {@code CreateIndex} (0
   * while the locking transaction's outcome is unknown: the next renewal takes the key's).
   */
  private record Tenure(Session session, long token) {}

  /**
   * A Consul session this store uses: one it created and shares among a holder's names of one TTL
   * ({@code key} non-null), or another store's session of the same holder, adopted for a name it
   * locks ({@code key} null; never destroyed here, as other names may be on it).
   */
  private static final class Session {
    final String id;
    final @Nullable SessionKey key;
    volatile Duration ttl;
    /** Names with a tenure on this session, attached before their lock is sent. */
    final Set<String> names = ConcurrentHashMap.newKeySet();
    boolean ended; // guarded by this
    @Nullable Renewal latest; // guarded by this
    /** Whether a name was ever granted on it: only such a session lingers without names. */
    volatile boolean carried;
    /** The session lives at least until then ({@link System#nanoTime}), by its last answered renewal. */
    volatile long aliveUntilNanos;

    Session(String id, @Nullable SessionKey key, Duration ttl) {
      this.id = id;
      this.key = key;
      this.ttl = ttl;
    }

    /** Consul answered a renewal sent at {@code sentNanos} with {@code granted}. */
    void renewed(long sentNanos, Duration granted) {
      long until = sentNanos + granted.toNanos();
      if (until - aliveUntilNanos > 0) {
        aliveUntilNanos = until;
      }
    }

    /**
     * Whether a new tenure may start on it while it carries no name: by its last answered renewal
     * (or its creation) at least half its TTL is left.
     */
    boolean fresh() {
      return aliveUntilNanos - System.nanoTime() >= ttl.toNanos() / 2;
    }

    /** Adds {@code batch} unless the session has ended. */
    synchronized boolean attach(Collection<String> batch) {
      if (ended) {
        return false;
      }
      names.addAll(batch);
      return true;
    }
  }

  /** A session renewal (or the creation): when it was sent, and Consul's answer (empty: ended). */
  private record Renewal(long sentNanos, long sentMillis,
      CompletableFuture<Optional<Duration>> answer) {}

  /** A renewal Consul answered: the session lives at least {@code ttl} after {@code sentMillis}. */
  private record Renewed(Session session, long sentMillis, Duration ttl) {}

  private ConsulLeaseStore(Builder b, Consul consul, boolean ownsClient,
      @Nullable SessionCreator sessionCreator) {
    this.consul = consul;
    this.ownsClient = ownsClient;
    this.kv = consul.keyValueClient();
    this.sessions = consul.sessionClient();
    this.sessionCreator = sessionCreator != null ? sessionCreator : SessionCreator.through(sessions);
    this.keys = new KeyLayout(b.options.keyPrefix);
    this.calls = b.options.calls();
    this.watchWaitSeconds = b.watchWaitSeconds;
  }

  /**
   * A store that creates and owns its Consul client (HTTP, or HTTPS: {@link Builder#tls}; an ACL
   * token: {@link Builder#aclTokenFile}) and destroys it on {@link #close()}. Its
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
    int watchWaitSeconds = ReleaseWatches.WAIT_SECONDS;

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
     * The ACL token sent with every request ({@code X-Consul-Token}); what it needs is
     * {@link ConsulPolicies#rules ConsulPolicies.rules(prefix, HOLDER)}. Only for stores built from
     * a URL: configure your own client's token on that client. Prefer {@link #aclTokenFile}.
     */
    public Builder aclToken(String aclToken) {
      options.aclToken(aclToken, "store");
      return this;
    }

    /**
     * As {@link #aclToken}, from a file holding the token (one trailing line break is dropped),
     * read now and again before a request whenever the file's modification time or size has
     * changed, and at least once a second: a rotated token is used from the next request on. A changed file that cannot be
     * used keeps the previous token in use and logs a warning.
     *
     * @throws IllegalArgumentException if the file cannot be read or holds no token
     */
    public Builder aclTokenFile(java.nio.file.Path file) {
      options.aclTokenFile(file, "store");
      return this;
    }

    /**
     * HTTPS to an {@code https://} URL: the agent's certificate is checked against
     * {@code trustCert} (PEM; null: the JDK's default trust store) and the host of the URL; for an
     * agent with {@code verify_incoming}, this store presents {@code clientCert} with
     * {@code clientKey} (PEM, the key unencrypted PKCS#8), both or neither. An agent whose
     * certificate is not trusted fails every call at once, saying what to check.
     */
    public Builder tls(java.nio.file.Path trustCert, java.nio.file.Path clientCert,
        java.nio.file.Path clientKey) {
      options.tls(trustCert, clientCert, clientKey, "store");
      return this;
    }

    /**
     * How long each release-watch query waits at Consul ({@code wait=}), 1 to
     * {@value ReleaseWatches#WAIT_SECONDS} s (the default); for tests that wait for superseded
     * queries to end.
     */
    Builder watchWait(Duration wait) {
      long s = wait.toSeconds();
      if (s < 1 || s > ReleaseWatches.WAIT_SECONDS || !wait.equals(Duration.ofSeconds(s))) {
        throw new IllegalArgumentException("watch wait must be whole seconds from 1 to "
            + ReleaseWatches.WAIT_SECONDS + ", was " + wait);
      }
      watchWaitSeconds = (int) s;
      return this;
    }

    /** The store; see the class comment for what it does on first use. */
    public ConsulLeaseStore build() {
      if (options.client != null) {
        return new ConsulLeaseStore(this, options.client, false, null);
      }
      OwnedClient owned = options.open();
      return new ConsulLeaseStore(this, owned.consul(), true,
          SessionCreator.direct(owned.direct(), options.url));
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
   * absent, a new tenure starts on the holder's shared session (created if there is none) with a
   * larger token; if another session holds the key, the answer is empty without any write.
   *
   * <p>Costs: a renewal is a session renewal (or one that another call of this store sent after
   * this call started: concurrent renewals of one session share it) and then one transaction —
   * two round trips, since the check that the key is still locked by the session must follow the
   * renewal; a new tenure on a live shared session (holding other names, or lingering after the
   * holder's last release) the same renewal and one transaction sent in parallel — one round trip;
   * without one, a read, the session's creation and the transaction; a refusal one read more.
   *
   * <p>Races: two contenders for a free lease both send their transaction; Consul applies one and
   * rolls the other back (that caller gets empty). The grant's {@code expiresAt} is the time the
   * session renewal it rests on was sent plus the TTL, on this machine's wall clock.
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
        () -> doAcquireOrRenew(new Tenant(name, holder), rounded, System.nanoTime()));
  }

  private Optional<LeaseGrant> doAcquireOrRenew(Tenant t, Duration ttl, long started) {
    String key = keys.keyOf(t.name());
    Tenure mine = tenures.get(t);
    if (mine != null) {
      Optional<LeaseGrant> renewed = renew(t, key, mine, started);
      if (renewed.isPresent()) {
        return renewed;
      }
    } else if (shared.containsKey(new SessionKey(t.holder(), ttl))) {
      // the holder has a session: a free name (absent, released, expired) is one transaction,
      // no read first
      Optional<LeaseGrant> fresh = startTenure(t, key, null, ttl, started, false);
      if (fresh.isPresent()) {
        return fresh;
      }
    }
    Optional<Value> current = kv.getValue(key);
    Optional<String> lockedBy = current.flatMap(ConsulLeaseStore::sessionOf);
    if (lockedBy.isPresent()) {
      String session = lockedBy.get();
      Tenure now = tenures.get(t);
      if (now == null || !session.equals(now.session().id)) {
        Optional<Session> adopted = adoptable(session, current.get(), t.holder(), ttl);
        if (adopted.isPresent() && adopted.get().attach(List.of(t.name()))) {
          Tenure tenure = new Tenure(adopted.get(), current.get().getCreateIndex());
          tenures.put(t, tenure);
          return renew(t, key, tenure, started);
        }
      }
      return Optional.empty();
    }
    return startTenure(t, key, current, ttl, started, true);
  }

  /**
   * Renews the tenure's session (or reuses a renewal sent after {@code started}), then, in one
   * transaction, checks that the session still locks the key and restamps it; the tenure ends
   * (and the answer is empty) if the session ended or no longer locks the key.
   */
  private Optional<LeaseGrant> renew(Tenant t, String key, Tenure tenure, long started) {
    Optional<Renewed> r = renewSession(tenure.session(), started);
    if (r.isEmpty()) { // invalidated: every tenure on it is over
      return Optional.empty();
    }
    String session = tenure.session().id;
    LeaseRecord record = new LeaseRecord(LeaseRecord.State.HELD, t.holder(), session, r.get().ttl(),
        r.get().sentMillis());
    Optional<Value> locked = transact(checkSession(key, session), lock(key, session, record));
    if (locked.isEmpty() || !sameTenure(tenure, locked.get())) {
      // deleted, locked by another session, or recreated by a newer tenure of ours
      detach(t, tenure, false);
      return Optional.empty();
    }
    long token = locked.get().getCreateIndex();
    if (tenure.token() == 0) {
      tenures.replace(t, tenure, new Tenure(tenure.session(), token));
    }
    return Optional.of(grant(t, token, r.get()));
  }

  private static boolean sameTenure(Tenure tenure, Value v) {
    return sessionOf(v).filter(tenure.session().id::equals).isPresent()
        && (tenure.token() == 0 || v.getCreateIndex() == tenure.token());
  }

  /**
   * A new tenure on the holder's shared session, in one transaction (see {@link #newTenure}).
   * Empty when Consul rolled it back (another session locks the key, or someone changed the key
   * since {@code current} was read); {@code last} says whether this is the call's last attempt
   * (then a session left without names is destroyed).
   *
   * <p>On a session that already exists, the session renewal the grant rests on and the lock
   * transaction are sent in parallel. That is sound: the renewal is still sent after this call
   * started, and the grant's expiry is counted from the time its request was prepared, which is
   * no later than when it was sent; the lock holds from its commit until Consul invalidates the
   * session, which — since the renewal found the session alive — is not before that expiry; and if
   * the session ended first, the renewal answers "unknown session" and nothing is granted (a lock
   * on an ended session fails, or was undone by Consul when it invalidated the session).
   */
  private Optional<LeaseGrant> startTenure(Tenant t, String key, @Nullable Optional<Value> current,
      Duration ttl, long started, boolean last) {
    Tenure stale = tenures.get(t);
    if (stale != null) {
      detach(t, stale, false);
    }
    for (int attempt = 0; attempt < 3; attempt++) {
      Pending p = sharedSession(t.holder(), ttl, started, List.of(t.name()));
      Session s = p.session();
      Tenure tenure = new Tenure(s, 0);
      // Remembered before the transaction: if its outcome is unknown, a retry renews this tenure.
      tenures.put(t, tenure);
      LeaseRecord record = new LeaseRecord(LeaseRecord.State.HELD, t.holder(), s.id, s.ttl,
          p.renewal().sentMillis());
      InParallel renewal = new InParallel(p);
      Optional<Value> locked;
      try {
        locked = transact(newTenure(key, current, s.id, record));
      } catch (RuntimeException e) {
        renewal.abandon(e);
        throw e;
      }
      Optional<Renewed> live = renewal.finish();
      if (live.isEmpty()) { // the session ended: whatever the transaction did, Consul undid
        if (locked.isPresent()) {
          return Optional.empty();
        }
        continue; // rolled back, perhaps only because the session had ended: on a new one
      }
      if (locked.isEmpty()) { // someone else changed the key since we read it
        detach(t, tenure, last);
        return Optional.empty();
      }
      long token = locked.get().getCreateIndex();
      tenures.replace(t, tenure, new Tenure(s, token));
      return Optional.of(grant(t, token, live.get()));
    }
    throw sessionKeptEnding(ttl);
  }

  private static LeaseStoreUnavailableException sessionKeptEnding(Duration ttl) {
    return new LeaseStoreUnavailableException("the holder's Consul session for " + ttl + " ended"
        + " three times while this call started a tenure on it; try again", null);
  }

  /**
   * The renewal of a {@link Pending} that this call sends, sent on another of the store's threads
   * while this one sends the lock transaction; here if no thread is free.
   */
  private final class InParallel {
    private final Pending pending;
    private final java.util.concurrent.@Nullable Future<?> forked;

    InParallel(Pending pending) {
      this.pending = pending;
      this.forked = pending.send()
          ? calls.fork(() -> send(pending.session(), pending.renewal())) : null;
    }

    /** The renewal's outcome (sending it now if no other thread took it). */
    Optional<Renewed> finish() {
      boolean here = pending.send() && (forked == null || calls.unfork(forked));
      if (pending.send() && !here) {
        calls.join(forked);
        if (!pending.renewal().answer().isDone()) { // the other thread found the deadline passed
          pending.renewal().answer().completeExceptionally(new LeaseStoreUnavailableException(
              "the renewal of session " + pending.session().id + " was not sent before the"
              + " call's deadline", null));
        }
      }
      return finishRenewal(new Pending(pending.session(), pending.renewal(), here));
    }

    /** The call failed: a renewal it never sent must not keep other calls waiting. */
    void abandon(RuntimeException cause) {
      if (pending.send() && (forked == null || calls.unfork(forked))) {
        pending.renewal().answer().completeExceptionally(cause);
      }
    }
  }

  /**
   * The operations of a new tenure of {@code key} on {@code session}, all ending in a {@code lock}
   * that creates the key afresh, so that the token (its {@code CreateIndex}) is the transaction's
   * Raft index, larger than every token before it:
   * <ul>
   *   <li>{@code current} null (not read): {@code lock}, {@code delete}, {@code lock}. The first
   *       lock rolls the transaction back when another session locks the key; otherwise the key
   *       is absent, released, expired (its session invalidated) or locked by this session, and
   *       the delete and the second lock recreate it. One transaction for every free key, with no
   *       read before it: a takeover after a release or an expiry costs what a fresh name does.
   *       (A key this session already locks is one that a concurrent call of the same holder for
   *       the same name has just taken: this call then starts a newer tenure, whose larger token
   *       fences the other call's grant out.)
   *   <li>{@code current} empty (read absent): {@code check-not-exists}, {@code lock}.
   *   <li>{@code current} present and unlocked: {@code delete-cas} at the index read, {@code lock};
   *       rolled back if the key changed since.
   * </ul>
   */
  private static Operation[] newTenure(String key, @Nullable Optional<Value> current,
      String session, LeaseRecord record) {
    Operation lock = lock(key, session, record);
    if (current == null) {
      return new Operation[] {lock, Operation.builder(Verb.DELETE).key(key).build(), lock};
    }
    return new Operation[] {guard(key, current.orElse(null)), lock};
  }

  /** {@code check-not-exists} for an absent key, else {@code delete-cas} at its index. */
  private static Operation guard(String key, @Nullable Value current) {
    return current != null
        ? Operation.builder(Verb.DELETE_CHECK_AND_SET).key(key)
            .index(BigInteger.valueOf(current.getModifyIndex())).build()
        : ImmutableOperation.builder().verb("check-not-exists").key(key).build();
  }

  /**
   * A session renewal that a call rests on: sent after the call started by another call (in flight
   * or answered; also the session's creation), or — {@code send} — prepared for this call to send.
   */
  private record Pending(Session session, Renewal renewal, boolean send) {}

  /**
   * The holder's shared session for {@code ttl}, created if there is none (or it ended), with
   * {@code names} attached, and a renewal of it sent after {@code started} (its creation counts):
   * locking a key does not extend a session, so a new tenure needs one too.
   */
  private Renewed liveSharedSession(HolderId holder, Duration ttl, long started,
      Collection<String> names) {
    for (int attempt = 0; attempt < 3; attempt++) {
      Optional<Renewed> r = finishRenewal(sharedSession(holder, ttl, started, names));
      if (r.isPresent()) {
        return r.get();
      }
    }
    throw sessionKeptEnding(ttl);
  }

  /**
   * The holder's shared session for {@code ttl}, created if there is none (or it ended), with
   * {@code names} attached, and the renewal to rest on, yet to be sent or awaited.
   */
  private Pending sharedSession(HolderId holder, Duration ttl, long started,
      Collection<String> names) {
    SessionKey k = new SessionKey(holder, ttl);
    for (int attempt = 0; attempt < 3; attempt++) {
      Session s = shared.get(k);
      if (s == null) {
        synchronized (creating) {
          s = shared.get(k);
          if (s == null) {
            ConsulCalls.ensureLive(); // an abandoned call creates no session
            long sentNanos = System.nanoTime();
            long sentMillis = System.currentTimeMillis();
            s = new Session(sessionCreator.create(holder, ttl), k, ttl);
            s.renewed(sentNanos, ttl);
            synchronized (s) {
              s.latest = new Renewal(sentNanos, sentMillis,
                  CompletableFuture.completedFuture(Optional.of(ttl)));
            }
            shared.put(k, s);
          }
        }
      } else {
        retireIfStale(s);
      }
      if (s.attach(names)) {
        return prepareRenewal(s, started);
      }
      shared.remove(k, s); // ended (destroyed, invalidated or stale): make a new one
    }
    throw sessionKeptEnding(ttl);
  }

  /**
   * Renews {@code s} once for every call that started before the request is sent: a call reuses a
   * renewal of the same session sent after it started (in flight or answered), so concurrent
   * renewals of one session cost one request. Empty when Consul no longer knows the session: every
   * tenure on it is then over.
   */
  private Optional<Renewed> renewSession(Session s, long started) {
    return finishRenewal(prepareRenewal(s, started));
  }

  /** The renewal of {@code s} to rest on: one sent after {@code started}, or a new one to send. */
  private static Pending prepareRenewal(Session s, long started) {
    synchronized (s) {
      Renewal r = s.latest;
      if (r != null && r.sentNanos() - started >= 0 && !r.answer().isCompletedExceptionally()) {
        return new Pending(s, r, false);
      }
      ConsulCalls.ensureLive();
      r = new Renewal(System.nanoTime(), System.currentTimeMillis(), new CompletableFuture<>());
      s.latest = r;
      return new Pending(s, r, true);
    }
  }

  /** Sends the pending renewal (or awaits it); empty, and its tenures ended, if {@code s} ended. */
  private Optional<Renewed> finishRenewal(Pending p) {
    Session s = p.session();
    Optional<Duration> answer = p.send() ? send(s, p.renewal())
        : await(p.renewal().answer(), "renewal of session " + s.id);
    if (answer.isEmpty()) {
      sessionEnded(s);
      return Optional.empty();
    }
    s.ttl = answer.get();
    s.renewed(p.renewal().sentNanos(), answer.get());
    return Optional.of(new Renewed(s, p.renewal().sentMillis(), answer.get()));
  }

  /** Sends renewal {@code r} of {@code s} and completes its answer (empty: Consul ended it). */
  private Optional<Duration> send(Session s, Renewal r) {
    Optional<Duration> answer;
    try {
      answer = sessions.renewSession(s.id)
          .map(info -> info.getTtl().flatMap(GoDuration::parse).orElse(s.ttl));
    } catch (ConsulException e) {
      if (e.getCode() != 404) {
        r.answer().completeExceptionally(e);
        throw e;
      }
      answer = Optional.empty();
    } catch (RuntimeException e) {
      r.answer().completeExceptionally(e);
      throw e;
    }
    r.answer().complete(answer);
    return answer;
  }

  private <T> T await(CompletableFuture<T> f, String what) {
    try {
      return f.get(Math.max(1, ConsulCalls.remainingNanos()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new LeaseStoreUnavailableException(what + ": " + calls.target()
          + " did not answer within " + calls.timeout() + "; the outcome is unknown", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException(what + ": interrupted", e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException re ? re
          : new LeaseStoreUnavailableException(what + " failed: " + e.getCause(), e.getCause());
    }
  }

  /** Consul no longer knows {@code s}: every tenure on it is over. */
  private void sessionEnded(Session s) {
    synchronized (s) {
      s.ended = true;
      s.names.clear();
    }
    if (s.key != null) {
      shared.remove(s.key, s);
    }
    tenures.values().removeIf(tn -> tn.session() == s);
  }

  /**
   * Ends {@code t}'s tenure here; with {@code destroyIfEmpty}, once no name is left on the store's
   * own session (after a release, or a failed last attempt to start a tenure), leaves it lingering
   * for the holder's next tenure if a name was granted on it and it is {@linkplain Session#fresh
   * fresh}, else destroys it.
   */
  private void detach(Tenant t, Tenure tenure, boolean destroyIfEmpty) {
    tenures.remove(t, tenure);
    Session s = tenure.session();
    boolean destroy = false;
    synchronized (s) {
      Tenure now = tenures.get(t);
      if (now == null || now.session() != s) {
        s.names.remove(t.name());
      }
      if (destroyIfEmpty && s.key != null && s.names.isEmpty() && !s.ended
          && !(s.carried && s.fresh())) {
        s.ended = true;
        destroy = true;
      }
    }
    if (destroy) {
      shared.remove(s.key, s);
      destroyQuietly(s.id);
    }
  }

  /**
   * Destroys {@code s}, in the background, if it lingers without names and is no longer fresh: the
   * caller then makes a new one. Also looks, at most once a second, for other such sessions
   * (holders that have not come back), so that none stays in this store's memory.
   */
  private void retireIfStale(Session s) {
    retireStale(s);
    long now = System.nanoTime();
    long due = nextSweepNanos.get();
    if (now - due >= 0 && nextSweepNanos.compareAndSet(due, now + SWEEP_EVERY_NANOS)) {
      for (Session other : shared.values()) {
        retireStale(other);
      }
    }
  }

  private void retireStale(Session s) {
    if (s.key == null) {
      return;
    }
    synchronized (s) {
      if (s.ended || !s.names.isEmpty() || s.fresh()) {
        return;
      }
      s.ended = true;
    }
    shared.remove(s.key, s);
    if (calls.fork(() -> {
      destroyQuietly(s.id);
      return null;
    }) == null) {
      log.debug("no thread free to destroy stale session {}; it ends by its TTL", s.id);
    }
  }

  /**
   * The session locking the key, if it belongs to {@code holder}: one of this store's own, or one
   * that another store of the same holder created (the record names the holder and the session,
   * named at creation, confirms it).
   */
  private Optional<Session> adoptable(String session, Value current, HolderId holder,
      Duration ttl) {
    for (Session s : shared.values()) {
      if (s.id.equals(session) && s.key.holder().equals(holder)) {
        return Optional.of(s);
      }
    }
    LeaseRecord record = recordOf(current);
    if (record == null || !record.holder().equals(holder)) {
      return Optional.empty();
    }
    return sessions.getSessionInfo(session)
        .filter(info -> info.getName().filter(holder.value()::equals).isPresent())
        .map(info -> new Session(session, null,
            info.getTtl().flatMap(GoDuration::parse).orElse(ttl)));
  }

  /**
   * Acquires or renews a batch natively, each name exactly as {@link #acquireOrRenew} would:
   * <ol>
   *   <li>renews the sessions the holder's tenures in the batch are on (one request per session,
   *       usually one; shared with concurrent calls as in the single call);
   *   <li>reads every key of the batch in one request (a recursive read of their longest common
   *       key prefix; it also returns any other key under that prefix): this is the check that each
   *       renewed name is still locked by its session, and tells the rest apart;
   *   <li>starts the new tenures on the holder's shared session in transactions of
   *       {@value ConsulTxn#MAX_OPS} operations (32 names); a transaction that Consul rolls back
   *       names the name that lost a race, which is settled by a single call while the
   *       transaction is sent again without it;
   *   <li>refusals carry who holds the name and until when ({@code heldBy}), from that read and
   *       one read of the sessions.
   * </ol>
   * Renewals in a batch do not rewrite the keys (that would cost a write per 32 names): the stamp
   * that {@link #inspect} estimates the expiry from stays the last single call's, so for names
   * renewed only by batches it reads as overdue ("look again in a second") while still HELD.
   * Names this holder may hold through another store are settled by single calls.
   */
  @Override
  public Map<String, AcquireResult> acquireOrRenewAll(Collection<String> names, HolderId holder,
      Duration ttl) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    TTL_RANGE.check(ttl);
    ensureOpen();
    if (checked.isEmpty()) {
      return Map.of();
    }
    Duration rounded = TTL_RANGE.roundUp(ttl);
    Map<String, AcquireResult> answers = calls.run("acquireOrRenewAll(" + checked.size()
        + " names)", batchTimeout(checked.size()), () -> doAcquireAll(checked, holder, rounded, System.nanoTime()));
    Map<String, AcquireResult> ordered = new LinkedHashMap<>();
    for (String n : checked) {
      ordered.put(n, answers.get(n));
    }
    return Collections.unmodifiableMap(ordered);
  }

  /**
   * The bound on a batch: one call timeout for its reads, and one per
   * {@value #NAMES_PER_CALL_TIMEOUT} names (started), since a batch writes one transaction per 32
   * new or released names.
   */
  private Duration batchTimeout(int names) {
    return calls.timeout().multipliedBy(1 + (names + NAMES_PER_CALL_TIMEOUT - 1)
        / NAMES_PER_CALL_TIMEOUT);
  }

  private Map<String, AcquireResult> doAcquireAll(List<String> names, HolderId holder,
      Duration ttl, long started) throws Exception {
    Map<String, AcquireResult> results = new ConcurrentHashMap<>();
    Map<Session, Optional<Renewed>> renewals = new IdentityHashMap<>();
    for (String n : names) {
      Tenure tn = tenures.get(new Tenant(n, holder));
      if (tn != null && !renewals.containsKey(tn.session())) {
        renewals.put(tn.session(), renewSession(tn.session(), started));
      }
    }
    Map<String, Value> current = new ConcurrentHashMap<>(readKeys(names));
    List<String> fresh = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    List<String> single = new ArrayList<>();
    for (String n : names) {
      Tenant t = new Tenant(n, holder);
      Value v = current.get(keys.keyOf(n));
      Tenure tn = tenures.get(t);
      if (tn != null) {
        Optional<Renewed> r = renewals.get(tn.session());
        if (r == null) { // a tenure that another call started meanwhile
          single.add(n);
          continue;
        }
        if (r.isPresent() && v != null && sameTenure(tn, v)) {
          if (tn.token() == 0) {
            tenures.replace(t, tn, new Tenure(tn.session(), v.getCreateIndex()));
          }
          results.put(n, new AcquireResult.Granted(grant(t, v.getCreateIndex(), r.get())));
          continue;
        }
        detach(t, tn, false);
      }
      if (v == null || sessionOf(v).isEmpty()) {
        fresh.add(n);
      } else if (recordOf(v) != null && recordOf(v).holder().equals(holder)) {
        single.add(n); // perhaps this holder's through another store: adopted by the single call
      } else {
        refused.add(n);
      }
    }
    if (!fresh.isEmpty()) {
      for (String n : startTenures(fresh, current, holder, ttl, started, results)) {
        Value v = current.get(keys.keyOf(n));
        boolean other = v != null && sessionOf(v).isPresent() && (recordOf(v) == null
            || !recordOf(v).holder().equals(holder));
        (other ? refused : single).add(n);
      }
    }
    if (!refused.isEmpty()) {
      Map<String, SessionInfo> infos = new HashMap<>();
      for (SessionInfo info : sessions.listSessions()) {
        infos.put(info.getId(), info);
      }
      for (String n : refused) {
        Value v = current.get(keys.keyOf(n));
        SessionInfo info = infos.get(sessionOf(v).orElseThrow());
        results.put(n, new AcquireResult.Refused(n,
            info == null ? Optional.empty() : Optional.of(held(n, v, info))));
      }
    }
    for (String n : single) {
      Optional<LeaseGrant> g = doAcquireOrRenew(new Tenant(n, holder), ttl, started);
      results.put(n, g.<AcquireResult>map(AcquireResult.Granted::new)
          .orElseGet(() -> AcquireResult.Refused.unexplained(n)));
    }
    return results;
  }

  /**
   * Starts tenures for {@code fresh} (absent or unlocked at the read), 32 names per transaction,
   * {@value #PARALLEL_TXNS} transactions at once (Consul commits concurrent ones together). When
   * Consul rolls one back, its names are read again: those now locked are returned (with
   * {@code current} updated) for the caller to settle, the others are sent again with the index
   * just read.
   */
  private List<String> startTenures(List<String> fresh, Map<String, Value> current,
      HolderId holder, Duration ttl, long started, Map<String, AcquireResult> results)
      throws Exception {
    Renewed live = liveSharedSession(holder, ttl, started, fresh);
    String session = live.session().id;
    String record = new LeaseRecord(LeaseRecord.State.HELD, holder, session, live.ttl(),
        live.sentMillis()).encode();
    List<String> taken = Collections.synchronizedList(new ArrayList<>());
    inChunks(fresh, chunk ->
        startChunk(new ArrayList<>(chunk), current, holder, live, record, results, taken));
    return taken;
  }

  /** Runs {@code each} on every run of 32 names, {@value #PARALLEL_TXNS} at once. */
  private void inChunks(List<String> names, java.util.function.Consumer<List<String>> each)
      throws Exception {
    List<Callable<@Nullable Void>> chunks = new ArrayList<>();
    int perTxn = ConsulTxn.MAX_OPS / 2;
    for (int from = 0; from < names.size(); from += perTxn) {
      List<String> chunk = names.subList(from, Math.min(names.size(), from + perTxn));
      chunks.add(() -> {
        each.accept(chunk);
        return null;
      });
    }
    calls.inParallel(chunks, PARALLEL_TXNS);
  }

  private void startChunk(List<String> pending, Map<String, Value> current, HolderId holder,
      Renewed live, String record, Map<String, AcquireResult> results, List<String> taken) {
    String session = live.session().id;
    Map<String, Tenure> mine = new HashMap<>();
    for (String n : pending) {
      Tenure tn = new Tenure(live.session(), 0);
      tenures.put(new Tenant(n, holder), tn); // an unknown outcome: the next call renews
      mine.put(n, tn);
    }
    while (!pending.isEmpty()) {
      Operation[] ops = new Operation[2 * pending.size()];
      for (int i = 0; i < pending.size(); i++) {
        String key = keys.keyOf(pending.get(i));
        ops[2 * i] = guard(key, current.get(key));
        ops[2 * i + 1] = Operation.builder(Verb.LOCK).key(key).session(session).value(record)
            .build();
      }
      ConsulTxn.Outcome o = ConsulTxn.attempt(kv, ops);
      if (o.committed()) {
        Map<String, Value> locked = new HashMap<>();
        for (Map<String, Value> result : o.response().results()) {
          Value v = result.get("KV");
          if (v != null) {
            locked.put(v.getKey(), v);
          }
        }
        for (String n : pending) {
          Value v = locked.get(keys.keyOf(n));
          if (v == null) {
            throw new LeaseStoreUnavailableException("Consul committed a lock transaction"
                + " without the entry of " + keys.keyOf(n) + ": " + o.response(), null);
          }
          Tenant t = new Tenant(n, holder);
          tenures.replace(t, mine.get(n), new Tenure(live.session(), v.getCreateIndex()));
          results.put(n, new AcquireResult.Granted(grant(t, v.getCreateIndex(), live)));
        }
        return;
      }
      // lost a race for some name: read the chunk again and drop what is locked now
      Map<String, Value> again = readKeys(pending);
      List<String> drop = new ArrayList<>();
      for (String n : pending) {
        String key = keys.keyOf(n);
        Value v = again.get(key);
        Value before = current.get(key);
        if (v == null) {
          current.remove(key);
        } else {
          current.put(key, v);
        }
        if (v != null && sessionOf(v).isPresent()) {
          drop.add(n);
        } else if (o.failedOp() / 2 == pending.indexOf(n) && o.failedOp() >= 0
            && Objects.equals(before == null ? null : before.getModifyIndex(),
                v == null ? null : v.getModifyIndex())) {
          drop.add(n); // failed, yet unchanged: let a single call settle it
        }
      }
      if (drop.isEmpty()) { // Consul did not say which, and nothing changed: settle one by one
        drop.addAll(pending);
      }
      for (String n : drop) {
        pending.remove(n);
        detach(new Tenant(n, holder), mine.get(n), false);
        taken.add(n);
      }
    }
  }

  /**
   * Every key of {@code names} that exists, read in one request: a recursive read of their
   * longest common key prefix (which also returns the other keys under it, ignored).
   */
  private Map<String, Value> readKeys(Collection<String> names) {
    Set<String> wanted = new HashSet<>();
    String prefix = null;
    for (String n : names) {
      String key = keys.keyOf(n);
      wanted.add(key);
      prefix = prefix == null ? key : commonPrefix(prefix, key);
    }
    Map<String, Value> found = new HashMap<>();
    for (Value v : kv.getValues(prefix)) {
      if (wanted.contains(v.getKey())) {
        found.put(v.getKey(), v);
      }
    }
    return found;
  }

  private static String commonPrefix(String a, String b) {
    int i = 0;
    int max = Math.min(a.length(), b.length());
    while (i < max && a.charAt(i) == b.charAt(i)) {
      i++;
    }
    return a.substring(0, i);
  }

  /**
   * Releases in one transaction ({@code check-session} + {@code unlock}, leaving a "released"
   * record that keeps the token); the holder's shared session is destroyed once no name is left
   * on it. Followers' blocking queries return at once. False when the holder's session no longer
   * locks the key (expired, taken, deleted).
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
      Optional<Session> adopted =
          adoptable(lockedBy.get(), current.get(), t.holder(), TTL_RANGE.min());
      if (adopted.isEmpty()) {
        return false;
      }
      tenure = new Tenure(adopted.get(), current.get().getCreateIndex());
    }
    String session = tenure.session().id;
    Optional<Value> unlocked = transact(checkSession(key, session), unlock(key, t.holder(),
        tenure.session()));
    detach(t, tenure, true);
    return unlocked.isPresent();
  }

  /** Releases one chunk of names with tenures here; names whose tenure ended go to {@code gone}. */
  private void releaseChunk(List<String> names, HolderId holder, Map<String, Boolean> results,
      List<String> gone) {
    List<String> pending = new ArrayList<>();
    Map<String, Tenure> chunk = new HashMap<>();
    for (String n : names) {
      Tenure tn = tenures.get(new Tenant(n, holder));
      if (tn == null) {
        gone.add(n); // ended meanwhile
      } else {
        pending.add(n);
        chunk.put(n, tn);
      }
    }
    while (!pending.isEmpty()) {
      Operation[] ops = new Operation[2 * pending.size()];
      for (int i = 0; i < pending.size(); i++) {
        String key = keys.keyOf(pending.get(i));
        Session s = chunk.get(pending.get(i)).session();
        ops[2 * i] = checkSession(key, s.id);
        ops[2 * i + 1] = unlock(key, holder, s);
      }
      ConsulTxn.Outcome o = ConsulTxn.attempt(kv, ops);
      if (o.committed()) {
        pending.forEach(n -> results.put(n, true));
        break;
      }
      if (o.failedOp() < 0 || o.failedOp() / 2 >= pending.size()) {
        for (String n : pending) { // Consul did not say which: one at a time
          results.put(n, doRelease(new Tenant(n, holder)));
        }
        break;
      }
      results.put(pending.remove(o.failedOp() / 2), false);
    }
    chunk.forEach((n, tn) -> detach(new Tenant(n, holder), tn, true));
  }

  private static Operation unlock(String key, HolderId holder, Session s) {
    LeaseRecord record = new LeaseRecord(LeaseRecord.State.RELEASED, holder, s.id, s.ttl,
        System.currentTimeMillis());
    return Operation.builder(Verb.UNLOCK).key(key).session(s.id).value(record.encode()).build();
  }

  /**
   * Releases a batch natively, each name exactly as {@link #release} would: the names this store
   * has a tenure for in transactions of 32 ({@code check-session} + {@code unlock} each; a name
   * whose check fails was not held and answers false, and the transaction is sent again without
   * it), the others after one read of their keys (only those locked by a session whose record
   * names the holder need a single call). Sessions left without names are destroyed.
   */
  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    ensureOpen();
    if (checked.isEmpty()) {
      return Map.of();
    }
    Map<String, Boolean> answers = calls.run("releaseAll(" + checked.size() + " names)",
        batchTimeout(checked.size()), () -> doReleaseAll(checked, holder));
    Map<String, Boolean> ordered = new LinkedHashMap<>();
    for (String n : checked) {
      ordered.put(n, answers.get(n));
    }
    return Collections.unmodifiableMap(ordered);
  }

  private Map<String, Boolean> doReleaseAll(List<String> names, HolderId holder)
      throws Exception {
    Map<String, Boolean> results = new ConcurrentHashMap<>();
    List<String> held = new ArrayList<>();
    List<String> others = new ArrayList<>();
    for (String n : names) {
      (tenures.containsKey(new Tenant(n, holder)) ? held : others).add(n);
    }
    List<String> gone = Collections.synchronizedList(new ArrayList<>());
    inChunks(held, chunk -> releaseChunk(chunk, holder, results, gone));
    others.addAll(gone);
    if (!others.isEmpty()) {
      Map<String, Value> current = readKeys(others);
      for (String n : others) {
        Value v = current.get(keys.keyOf(n));
        LeaseRecord record = v == null ? null : recordOf(v);
        boolean maybeOurs = v != null && sessionOf(v).isPresent() && record != null
            && record.holder().equals(holder);
        results.put(n, maybeOurs && doRelease(new Tenant(n, holder)));
      }
    }
    return results;
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
      Optional<SessionInfo> info = sessions.getSessionInfo(lockedBy.get());
      if (info.isEmpty()) {
        continue; // the session ended between the two reads; Consul has unlocked the key by now
      }
      return held(name, v, info.get());
    }
    throw new LeaseStoreUnavailableException("inspect('" + name + "'): key " + key + " stayed"
        + " locked by sessions that Consul does not know; try again", null);
  }

  /**
   * HELD, for key {@code v} locked by the session {@code info}: the holder is the session's name,
   * the expiry an estimate from the record's stamp (see the class comment).
   */
  private static LeaseState.Held held(String name, Value v, SessionInfo info) {
    String session = info.getId();
    LeaseRecord record = recordOf(v);
    boolean ours = record != null && record.session().equals(session);
    HolderId holder = holderOf(info, ours ? record : null, session);
    Duration ttl = info.getTtl().flatMap(GoDuration::parse).orElse(ours ? record.ttl() : null);
    long now = System.currentTimeMillis();
    Duration remaining = remaining(ours ? record.stampMillis() : null, ttl, now);
    return new LeaseState.Held(name, holder, v.getCreateIndex(),
        Instant.ofEpochMilli(now).plus(remaining), remaining);
  }

  /**
   * Until the stamp plus the TTL; once that has passed (Consul keeps the session up to 2 x TTL),
   * until the stamp plus 2 x TTL; past that, one second ("not yet invalidated: look again").
   * Never more than the TTL.
   */
  static Duration remaining(@Nullable Long stampMillis, @Nullable Duration ttl, long nowMillis) {
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

  private static HolderId holderOf(SessionInfo info, @Nullable LeaseRecord record, String session) {
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

  /**
   * The names Consul keeps a key for, as {@link LeaseListing} describes: held, expired and
   * released ones alike ({@code Behavior release} keeps every tenure's key; only an out-of-band
   * delete removes it, and that ends the tenure). One
   * {@code GET /v1/kv/<keyPrefix>/<E(prefix)>?keys&separator=/}, bounded by the call timeout:
   * the separator folds every folder below the prefix (run records under {@code .once/}, stores
   * under longer prefixes) into one entry, which is skipped, as are keys this store did not
   * write. The URL holds only {@code E}'s output, which needs no escaping, whatever characters
   * the prefix has. The key encoding does not keep code-point order ({@code ~XX} escapes sort
   * after every plain character), and Consul lists keys in its own order, so the whole answer is
   * decoded, sorted by {@link LeaseListing#CODE_POINT_ORDER} and cut to {@code limit}: a prefix
   * with very many names costs a long answer, not a wrong one.
   *
   * <p><b>ACL.</b> Needs {@code key_prefix "<keyPrefix>/"} {@code read}, which
   * {@link ConsulPolicies.Access#OBSERVER} and {@link ConsulPolicies.Access#HOLDER} both grant.
   * Consul leaves the keys a token may not read out of a listing rather than refusing it, so an
   * empty answer is checked by a read of one key under the prefix: a token without read there
   * throws {@link ConsulAccessDeniedException} instead of listing nothing. A token that may read
   * only part of the prefix (a narrower {@code key_prefix} rule, or a {@code deny} below it) gets
   * an answer that Consul marks with the {@code X-Consul-Results-Filtered-By-ACLs} header: a store
   * built from a URL reads it and throws {@link ConsulAccessDeniedException} rather than answer
   * part of the names; a store on your own client cannot see the header and answers the names the
   * token may read. On servers with
   * {@code acl.enable_key_list_policy = true} the listing itself needs {@code list} (which
   * includes read) on {@code <keyPrefix>/}; {@code write} includes it, {@code read} does not.
   */
  @Override
  public List<String> names(String prefix, int limit) {
    LeaseListing.requireListing(prefix, limit);
    ensureOpen();
    String from = keys.keysFrom(prefix);
    return calls.run("names('" + prefix + "')", () -> {
      List<String> listed = new ArrayList<>();
      for (String key : kv.getKeys(from, "/")) {
        String name = keys.nameOf(key);
        if (name != null) {
          listed.add(name);
        }
      }
      if (ConsulCalls.answersFilteredByAcls()) {
        throw new ConsulAccessDeniedException("names('" + prefix + "'): Consul left keys under "
            + keys.prefix() + "/ out of the listing that this store's ACL token may not read ("
            + ConsulCalls.FILTERED_BY_ACLS + "); a complete listing needs key:read on all of"
            + " them: grant key_prefix \"" + keys.prefix() + "/\" { policy = \"read\" }"
            + " (ConsulPolicies.rules(prefix, OBSERVER))");
      }
      if (listed.isEmpty()) {
        kv.getValue(from); // refused (403) when the token may not read the prefix
        return List.<String>of();
      }
      listed.sort(LeaseListing.CODE_POINT_ORDER);
      return List.copyOf(listed.subList(0, Math.min(limit, listed.size())));
    });
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  /**
   * Runs {@code listener} when {@code name}'s key is seen unlocked after being locked (a release, a
   * session invalidated by Consul, an out-of-band delete), watched with Consul blocking queries:
   * one per name while a store watches up to eight names, one over the store's whole key prefix
   * when it watches more (so a store keeps at most two requests open for its hints, however many
   * names it watches; every write under the prefix then returns the listing to it — see
   * {@code ReleaseWatches} for that cost). It runs on the Consul client's HTTP callback thread and
   * must return quickly.
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
        watches = new ReleaseWatches(kv, keys, watchWaitSeconds);
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
    for (Session s : shared.values()) { // sessions with names stay: their leases expire
      boolean empty;
      synchronized (s) {
        empty = s.names.isEmpty() && !s.ended;
        s.ended |= empty;
      }
      if (empty) {
        destroyQuietly(s.id);
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

  /** A grant that lasts the session's TTL from when the renewal it rests on was sent. */
  private static LeaseGrant grant(Tenant t, long token, Renewed r) {
    r.session().carried = true;
    return new LeaseGrant(t.name(), t.holder(), token,
        Instant.ofEpochMilli(r.sentMillis()).plus(r.ttl()), r.ttl());
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

  private static @Nullable LeaseRecord recordOf(Value v) {
    return LeaseRecord.parse(v.getValueAsString(StandardCharsets.UTF_8).orElse(null));
  }
}
