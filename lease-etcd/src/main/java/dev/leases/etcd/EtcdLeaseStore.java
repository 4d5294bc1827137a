package dev.leases.etcd;

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
import dev.leases.spi.ReleaseListeners;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
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
import io.etcd.jetcd.options.OptionsUtil;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.net.URI;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases on etcd v3 (jetcd): lease keys attached to one <em>shared</em> etcd lease per (store,
 * holder, TTL), as etcd's Go {@code concurrency.Session} does.
 *
 * <p><b>Guarantees.</b> Expiry is judged by etcd's lessor (the Raft leader's clock), never by this
 * process's clock. The fencing token is the lease key's {@code create_revision}: a cluster-wide,
 * persisted revision that is the same for every renewal within a tenure and larger for every new
 * tenure — after a release, an expiry, a change of holder, even after someone deletes the keys by
 * hand (a re-created key gets a newer revision). Names acquired in one transaction share its
 * revision, so they may have equal tokens; each name's tokens still only grow. Acquire is one
 * transaction per name {@code If(create_revision(key) == 0) Then(put key on the shared etcd lease,
 * put companion)} (nested, many names per request), so of many racing contenders exactly one wins.
 * Reads are linearizable. A companion key that never expires records the last tenure, so
 * {@link #inspect} tells a released lease ({@code FREE}) from one whose holder stopped renewing
 * ({@code EXPIRED}), and {@link #token} reports the highest token even when no lease key exists;
 * with neither key (never granted, or both deleted by hand) it reports etcd's current revision, a
 * bound that no earlier token exceeds and every later one does.
 * Tokens are revisions of one cluster: restoring an older snapshot or moving to a new cluster makes
 * them smaller — reset the fences of guarded resources when you do that.
 *
 * <p><b>Shared etcd leases, and their fate.</b> New tenures of a holder attach their keys to the
 * holder's current shared etcd lease for that TTL; one is granted when there is none, when it was
 * lost, or when by its last answered keep-alive less than half its TTL is left. Every grant's expiry
 * is measured from the call's send time and only from a keep-alive (or the grant) of the key's etcd
 * lease sent <em>during that call</em>: an acquire sends a keep-alive of the shared lease together
 * with its transaction, so a name joining a lease granted long ago gets the full TTL (etcd resets the
 * lease), never the remainder of an older keep-alive. A renewal sends the keep-alive first (one per
 * etcd lease per call, coalesced with concurrent calls of the store: a call joins a keep-alive sent
 * after it began, or the next one), then reads the keys, and grants only the names whose key is
 * still ours on that etcd lease; a keep-alive alone proves nothing, since deleting a key by hand
 * leaves its etcd lease alive while someone else acquires the name. So one renewal round of many
 * names costs one keep-alive and one read. <em>Shared fate:</em> all names on one shared etcd lease
 * live and die together. Revoking it (by hand, or etcd expiring it because no renewal of any of
 * them landed) deletes every key on it at once, and their next grants are new tenures with larger
 * tokens. Conversely a name its holder stops renewing, but does not release, stays held as long as
 * the holder renews any other name on the same etcd lease: release names you give up.
 * <em>Lingering:</em> the holder's current shared etcd lease stays in etcd after the last name on
 * it was released (or refused), carrying no key and kept alive by nobody, so that the holder's next
 * new tenure attaches to it: one transaction (with its keep-alive sent in parallel) instead of a
 * grant and then a transaction. It is used so only while by its last answered keep-alive at least
 * half its TTL is left; after that, when a newer shared lease replaces it, and on {@link #close()}
 * it is revoked (otherwise etcd expires it by its TTL). A lingering lease holds nothing: a released
 * name is FREE at once (its key is deleted). Other shared etcd leases that carry no name of this
 * store (one replaced, one whose last name was refused or lost rather than released, one granted
 * for a race that every name lost) are revoked at once. Stores, and holders, do not share etcd
 * leases with each other.
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
 * <p><b>Security.</b> {@link #builder(String...)} takes credentials ({@link Builder#user}) and
 * TLS or mutual TLS ({@link Builder#tls}, {@code https://} endpoints); the factory takes the same as
 * settings, the password from a file or an environment variable. The password is never logged or
 * put in a message. Minimal grants, for a cluster with authentication enabled
 * ({@link EtcdRoles} prints and applies them): a holder's role needs {@code readwrite} on the key
 * range {@code <keyPrefix>/} ({@code etcdctl role grant-permission --prefix=true ROLE readwrite
 * <keyPrefix>/}) — every key this store, {@link EtcdRunLedger} and {@link EtcdFence} keep is under
 * it, except the resources a fence guards, which need write as well; an observer's role needs
 * {@code read} on it ({@code inspect}, {@code token}, {@code onRelease}, {@code names},
 * {@code history}). etcd's lease calls need
 * no permission of their own (grant and keep-alive are unchecked, revoke and time-to-live check
 * the attached keys, all under the prefix). A call etcd refuses for who is calling throws
 * {@link EtcdAccessDeniedException}, naming the user and the key range; a TLS handshake that fails
 * (an untrusted certificate, a missing client certificate) fails at once with a
 * {@link LeaseStoreUnavailableException} that says what to check; a call after the auth token
 * expired ({@code --auth-token-ttl} of idleness) authenticates again. etcd 3.4 does not check
 * permissions on operations nested in a transaction (etcd-io/etcd#21689): every batch transaction
 * of this store therefore carries a no-op delete of {@code <keyPrefix>/lease}, which etcd does
 * check, so a read-only user cannot acquire or release through the nested operations.
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
 * Renewal is one bounded {@code keepAliveOnce} per etcd lease per call, driven by the caller (use
 * {@link dev.leases.leader.LeaderLoop}); jetcd's background {@code keepAlive} stream, which can stop
 * silently, is not used. Batches split as etcd requires ({@code --max-txn-ops}, default 128; a
 * request stays well under gRPC's 4 MiB answers) and send their requests at once. {@link #onRelease} watches the lease key and fires on its {@code DELETE}
 * (release, expiry or manual delete); a lost watch only delays followers until the expiry they last
 * read.
 *
 * <p><b>History.</b> etcd keeps every revision of a key until compaction, so {@link #history}
 * (not part of {@link LeaseStore}; the other backends keep no history) lists a lease's past
 * grants, rewrites, releases and expiries with their holders and tokens, back to the compact
 * revision.
 */
public final class EtcdLeaseStore implements LeaseStore, LeaseListing {

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
  private static final int MAX_ROUNDS = 5;

  /** etcd's default {@code --max-txn-ops}: the most operations (and compares) one txn may have. */
  static final int MAX_TXN_OPS = 128;

  /**
   * Nested per-name txns per request: each has 3 operations, and k children plus the request's
   * {@linkplain KeyLayout#writeGuardKey write guard} need k + 1 + 3 <= 128.
   */
  static final int ACQUIRE_PER_TXN = MAX_TXN_OPS - 4;

  /** Nested per-name release txns per request: 2 compares and 2 operations each, plus the guard. */
  static final int RELEASE_PER_TXN = MAX_TXN_OPS - 3;

  /** What one page of a range read may answer, well under gRPC's default 4 MiB message. */
  private static final int RANGE_PAGE_BYTES = 3 << 20;

  /**
   * Keys per range of one page of {@link #names}: two ranges of the longest possible keys (a
   * 64-character prefix, a 200-character name of 3-byte characters escaped to 1,800 bytes) and
   * their per-key fields within {@link #RANGE_PAGE_BYTES}.
   */
  static final int LIST_PAGE_KEYS = RANGE_PAGE_BYTES / 2
      / (KeyLayout.MAX_PREFIX_LENGTH + "/lease/".length() + 9 * LeaseArguments.MAX_NAME_LENGTH + 64);
  private static final Duration CLOSE_REVOKE_WAIT = Duration.ofSeconds(1);

  private final Client client;
  private final boolean ownsClient;
  private final ClientSettings.Opened opened;
  private final KV kv;
  private final Lease leases;
  private final Watch watch;
  private final KeyLayout keys;
  private final Calls calls;
  private final AtomicBoolean closed = new AtomicBoolean();
  /**
   * Runs {@link #onRelease} listeners, user code, one at a time: never on the client's threads, on
   * which every call of the store completes, so a listener that blocks delays only other listeners.
   */
  private final java.util.concurrent.ExecutorService listenerThread =
      java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "leases-etcd-listener-" + LISTENER_THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
      });
  private static final java.util.concurrent.atomic.AtomicInteger LISTENER_THREADS =
      new java.util.concurrent.atomic.AtomicInteger();
  /** Set just before {@link #close()} closes a client this store built: nothing is sent after. */
  private volatile boolean clientClosed;
  /** {@link #onRelease} listeners by name; one watch per name with listeners, guarded by itself. */
  private final ReleaseListeners listeners = new ReleaseListeners();
  private final Map<String, Watch.Watcher> watchers = new HashMap<>();
  private final Set<CompletableFuture<?>> pendingRevokes = ConcurrentHashMap.newKeySet();
  private final SharedLeases shared;
  private final EtcdFence fence;

  private EtcdLeaseStore(ClientSettings.Opened opened) {
    this.client = opened.client();
    this.ownsClient = opened.owned();
    this.opened = opened;
    this.kv = client.getKVClient();
    this.leases = client.getLeaseClient();
    this.watch = client.getWatchClient();
    this.keys = opened.keys();
    this.calls = new Calls(opened.callTimeout(), closed::get, opened.endpoints(),
        "EtcdLeaseStore", opened.user(), opened.keys().prefix());
    this.shared = new SharedLeases(leases, opened.callTimeout(), this::revokeLater);
    this.fence = new EtcdFence(client, keys.prefix(), opened.callTimeout(), closed::get,
        opened.endpoints(), opened.user());
  }

  /**
   * An {@link EtcdFence} on this store's client, key prefix and call timeout (so on its
   * credentials and TLS settings too); its calls fail with
   * {@link LeaseStoreClosedException} once this store is closed. Its user needs write permission
   * on the guarded resource keys as well (see {@link EtcdRoles}).
   */
  public EtcdFence fence() {
    return fence;
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
   * {@code "http://127.0.0.1:2379"}, or {@code "https://..."} with {@link Builder#tls}; add
   * {@link Builder#user} for a cluster with authentication enabled. That client runs its calls'
   * callbacks on a small fixed pool of threads of its own (named {@code leases-etcd-grpc-*}, ended
   * by {@link #close()}), however many names the store holds; {@link #onRelease} listeners run on
   * one thread of the store's ({@code leases-etcd-listener-*}), never on those.
   */
  public static Builder builder(String... endpoints) {
    return new Builder(ClientSettings.of(endpoints));
  }

  /** A builder on settings parsed elsewhere (the factories). */
  static Builder builder(ClientSettings settings) {
    return new Builder(settings);
  }

  // ---------------------------------------------------------------- the SPI

  /**
   * Acquires {@code name} for {@code holder}, or renews it if {@code holder} has it: a one-name
   * {@link #acquireOrRenewAll}, without the refusal's explanation. A renewal of a name this store
   * put on the holder's shared etcd lease costs a keep-alive (coalesced with concurrent renewals of
   * the same holder) and then one read; a fresh acquire by a holder with a fresh shared lease
   * (holding other names, or lingering after its last release) costs one transaction, sent together
   * with a keep-alive of the shared lease; without one, a read, a grant and the transaction. See the
   * class comment for what each step proves.
   */
  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    TTL_RANGE.check(ttl);
    ensureOpen();
    return settle(List.of(name), holder, ttl, false).get(name).grant();
  }

  /**
   * Acquires or renews every name, natively: renewals of names on the holder's shared etcd lease
   * cost one keep-alive and then one read of all their keys (a range over the batch's keys, or
   * transactions of up to {@value #MAX_TXN_OPS} gets for a small batch or a range crowded with
   * other keys); free names are acquired by transactions of {@value #ACQUIRE_PER_TXN} nested
   * per-name transactions each, all sent at once. A refusal carries {@code heldBy}: the holder and
   * token read with the key, the remaining TTL from one {@code LeaseTimeToLive} per distinct etcd
   * lease of the refused names, all sent at once.
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
    return Collections.unmodifiableMap(settle(checked, holder, ttl, true));
  }

  /** What a name needs next during {@link #settle}. */
  private enum Step {
    /** Read the key, after a keep-alive (sent during this call) of the etcd lease it should be on. */
    READ,
    /** Create the key on the shared etcd lease, if it does not exist. */
    ACQUIRE,
    /** Move our key, unchanged since it was read, to the shared etcd lease (it asks a longer TTL). */
    MOVE
  }

  /** A name still to settle; {@code lease} is what a READ expects (0: unknown), {@code seen} a MOVE's key. */
  private record Pending(String name, Step step, long lease, @Nullable KeyValue seen) {
    static Pending read(String name, long lease) {
      return new Pending(name, Step.READ, lease, null);
    }

    static Pending acquire(String name) {
      return new Pending(name, Step.ACQUIRE, 0, null);
    }
  }

  /** The state of one {@link #settle} call. */
  private final class Call {
    final HolderId holder;
    final ByteSequence holderValue;
    final long seconds;
    final long sentMillis = System.currentTimeMillis();
    final long sentNanos = System.nanoTime();
    final Calls.Budget budget = calls.budget();
    final Set<SharedLeases.Shared> used = new HashSet<>();
    final Map<Long, SharedLeases.Shared> sharedById = new HashMap<>();
    /** Keep-alives sent during this call, by etcd lease; answered ones in {@link #ttls}. */
    final Map<Long, Supplier<CompletableFuture<LeaseKeepAliveResponse>>> keepAlives = new HashMap<>();
    /** The TTL etcd granted each etcd lease by a keep-alive (or grant) sent during this call; 0: gone. */
    final Map<Long, Long> ttls = new HashMap<>();
    SharedLeases.@Nullable Shared current;
    final Map<String, SharedLeases.Shared> hints = new HashMap<>();
    final List<String> unhints = new ArrayList<>();

    Call(HolderId holder, long seconds) {
      this.holder = holder;
      this.holderValue = utf8(holder.value());
      this.seconds = seconds;
    }

    void use(SharedLeases.Shared s) {
      sharedById.put(s.id, s);
    }
  }

  /**
   * Every name's outcome, judged name by name. Each grant's expiry is measured from this call's
   * start, and only from a keep-alive or grant of the key's etcd lease sent after it; a renewal
   * is granted only if the key, read after that keep-alive was answered, is still ours on that
   * etcd lease.
   */
  private Map<String, AcquireResult> settle(List<String> names, HolderId holder, Duration ttl,
      boolean explain) {
    Call c = new Call(holder, TTL_RANGE.roundUp(ttl).toSeconds());
    Map<String, AcquireResult> results = new LinkedHashMap<>();
    names.forEach(n -> results.put(n, null));
    Map<String, KeyValue> refused = new LinkedHashMap<>();
    try {
      Map<String, SharedLeases.Shared> hinted = shared.useHinted(holder, names, c.used);
      hinted.values().forEach(c::use);
      c.current = shared.useCurrent(holder, c.seconds, c.used);
      if (c.current != null) {
        c.use(c.current);
      }
      List<Pending> pending = new ArrayList<>();
      for (String n : names) {
        SharedLeases.Shared s = hinted.get(n);
        pending.add(s != null ? Pending.read(n, s.id)
            : c.current != null ? Pending.acquire(n) : Pending.read(n, 0));
      }
      for (int round = 0; !pending.isEmpty(); round++) {
        if (round == MAX_ROUNDS) {
          throw new LeaseStoreUnavailableException(pending.size() + " lease(s), e.g. '"
              + pending.get(0).name() + "', changed hands " + MAX_ROUNDS + " times during one call;"
              + " their outcome is unknown, try again", null);
        }
        pending = round(c, pending, results, refused);
      }
      if (!refused.isEmpty()) {
        Map<String, Optional<LeaseState.Held>> why = explain ? heldBy(refused, c.budget) : Map.of();
        refused.forEach((n, kv) -> results.put(n,
            new AcquireResult.Refused(n, why.getOrDefault(n, Optional.empty()))));
        c.unhints.addAll(refused.keySet());
      }
      shared.hintAll(c.hints);
      shared.unhint(holder, c.unhints, false);
      return results;
    } finally {
      shared.done(c.used);
    }
  }

  /** One round: keep-alives, then the transactions and the reads; returns what is left to do. */
  private List<Pending> round(Call c, List<Pending> pending, Map<String, AcquireResult> results,
      Map<String, KeyValue> refused) {
    List<Pending> reads = new ArrayList<>();
    List<Pending> writes = new ArrayList<>();
    for (Pending p : pending) {
      (p.step() == Step.READ ? reads : writes).add(p);
      if (p.step() == Step.READ && p.lease() != 0) {
        startKeepAlive(c, p.lease());
      }
    }
    List<Pending> next = new ArrayList<>();
    if (!writes.isEmpty()) {
      SharedLeases.Shared target = attachTarget(c);
      List<@Nullable TxnResponse> answers = writeAll(c, writes, target);
      long t = keepAliveTtl(c, target.id);
      for (int i = 0; i < writes.size(); i++) {
        Pending p = writes.get(i);
        TxnResponse r = answers.get(i);
        if (r == null || t <= 0) { // the shared etcd lease is gone, and every key on it
          lost(c, target);
          next.add(p);
          continue;
        }
        KeyValue now = first(r.getGetResponses().get(0));
        if (r.isSucceeded()) {
          granted(c, results, p.name(), now, t);
        } else if (now == null) {
          next.add(Pending.acquire(p.name()));
        } else if (!now.getValue().equals(c.holderValue)) {
          refused.put(p.name(), now);
        } else {
          // ours, but read at no known moment after the keep-alive: read it again after one
          next.add(Pending.read(p.name(), requireOurs(now).getLease()));
        }
      }
    }
    if (!reads.isEmpty()) {
      for (Pending p : reads) {
        if (p.lease() != 0) {
          keepAliveTtl(c, p.lease());
        }
      }
      Map<String, KeyValue> now = readKeys(reads.stream().map(Pending::name).toList(), c.budget);
      for (Pending p : reads) {
        KeyValue kv = now.get(p.name());
        if (kv == null) {
          next.add(Pending.acquire(p.name()));
        } else if (!kv.getValue().equals(c.holderValue)) {
          refused.put(p.name(), kv);
        } else if (p.lease() == 0 || requireOurs(kv).getLease() != p.lease()) {
          next.add(Pending.read(p.name(), requireOurs(kv).getLease()));
        } else {
          long t = c.ttls.get(p.lease());
          if (t <= 0) {
            next.add(Pending.acquire(p.name())); // its etcd lease is gone: so is the key by now
          } else if (t < c.seconds) {
            next.add(new Pending(p.name(), Step.MOVE, p.lease(), kv));
          } else {
            granted(c, results, p.name(), kv, t);
          }
        }
      }
    }
    return next;
  }

  private void granted(Call c, Map<String, AcquireResult> results, String name, KeyValue kv,
      long ttlSeconds) {
    results.put(name, new AcquireResult.Granted(grant(name, c.holder, kv.getCreateRevision(),
        c.sentMillis, ttlSeconds)));
    SharedLeases.Shared s = c.sharedById.get(kv.getLease());
    if (s != null) {
      c.hints.put(name, s);
    } else {
      c.unhints.add(name);
    }
  }

  /**
   * The shared etcd lease new keys of this call attach to: the holder's current one (a keep-alive
   * of it is sent now, so that the new keys' expiry is measured from after the call began), else
   * one granted now.
   */
  private SharedLeases.Shared attachTarget(Call c) {
    if (c.current != null && !c.current.dead) {
      startKeepAlive(c, c.current.id);
      return c.current;
    }
    SharedLeases.Shared s = shared.useCurrent(c.holder, c.seconds, c.used);
    if (s == null) {
      long sent = System.nanoTime();
      LeaseGrantResponse g = calls.retrying(() -> leases.grant(c.seconds), c.budget,
          "grant a " + c.seconds + " s etcd lease for holder " + c.holder.value());
      s = shared.install(c.holder, c.seconds, g.getID(), sent, g.getTTL(), c.used);
      if (s.id == g.getID()) {
        c.ttls.put(s.id, g.getTTL());
      }
    }
    c.use(s);
    c.current = s;
    startKeepAlive(c, s.id);
    return s;
  }

  /** Marks {@code s} lost: every key on it is gone (or about to be), and so are our hints. */
  private void lost(Call c, SharedLeases.Shared s) {
    shared.lost(s);
    if (c.current == s) {
      c.current = null;
    }
  }

  /** Starts, once per call, a keep-alive of {@code leaseId} sent after the call began. */
  private void startKeepAlive(Call c, long leaseId) {
    if (c.ttls.containsKey(leaseId) || c.keepAlives.containsKey(leaseId)) {
      return;
    }
    SharedLeases.Shared s = c.sharedById.get(leaseId);
    Supplier<CompletableFuture<LeaseKeepAliveResponse>> send = s != null
        ? () -> s.keepAliveSentAfter(c.sentNanos) : () -> leases.keepAliveOnce(leaseId);
    CompletableFuture<LeaseKeepAliveResponse> first;
    try {
      first = send.get();
    } catch (RuntimeException e) {
      first = CompletableFuture.failedFuture(e);
    }
    AtomicReference<CompletableFuture<LeaseKeepAliveResponse>> once = new AtomicReference<>(first);
    c.keepAlives.put(leaseId, () -> {
      CompletableFuture<LeaseKeepAliveResponse> f = once.getAndSet(null);
      return f != null ? f : send.get();
    });
  }

  /** The TTL the call's keep-alive of {@code leaseId} granted, or 0 if the etcd lease is gone. */
  private long keepAliveTtl(Call c, long leaseId) {
    Long known = c.ttls.get(leaseId);
    if (known != null) {
      return known;
    }
    startKeepAlive(c, leaseId);
    long t;
    try {
      LeaseKeepAliveResponse r = calls.retrying(c.keepAlives.remove(leaseId), c.budget,
          "keep etcd lease " + Long.toHexString(leaseId) + " alive");
      t = Math.max(0, r.getTTL());
    } catch (LeaseStoreUnavailableException e) {
      if (Calls.code(e) != ErrorCode.NOT_FOUND) {
        throw e;
      }
      t = 0;
    }
    c.ttls.put(leaseId, t);
    SharedLeases.Shared s = c.sharedById.get(leaseId);
    if (t <= 0 && s != null) {
      lost(c, s);
    }
    return t;
  }

  /**
   * The ACQUIRE and MOVE transactions of a round, nested per name so that each has its own compare,
   * {@link #ACQUIRE_PER_TXN} per request, all sent at once. Null for the names of a request that
   * etcd refused because {@code target} no longer exists.
   */
  private List<@Nullable TxnResponse> writeAll(Call c, List<Pending> writes, SharedLeases.Shared target) {
    PutOption onTarget = PutOption.builder().withLeaseId(target.id).build();
    List<Op> children = new ArrayList<>();
    for (Pending p : writes) {
      ByteSequence key = keys.leaseKey(p.name());
      if (p.step() == Step.ACQUIRE) {
        // Safe to repeat: a repeat after a lost answer finds the key on our own etcd lease.
        children.add(Op.txn(new Cmp[] {new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0))},
            new Op[] {Op.put(key, c.holderValue, onTarget),
                Op.put(keys.lastKey(p.name()), LastTenure.held(c.holder), PutOption.DEFAULT),
                Op.get(key, GetOption.DEFAULT)},
            new Op[] {Op.get(key, GetOption.DEFAULT)}));
      } else {
        // an unchanged mod_revision: same tenure, etcd lease and holder; the put keeps the token
        children.add(Op.txn(new Cmp[] {
                new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(p.seen().getCreateRevision())),
                new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(p.seen().getModRevision()))},
            new Op[] {Op.put(key, c.holderValue, onTarget), Op.get(key, GetOption.DEFAULT)},
            new Op[] {Op.get(key, GetOption.DEFAULT)}));
      }
    }
    return nested(children, ACQUIRE_PER_TXN, c.budget, writes.size() == 1
        ? "acquire '" + writes.get(0).name() + "'" : "acquire " + writes.size() + " leases",
        e -> {
          if (Calls.code(e) == ErrorCode.NOT_FOUND) {
            return null; // "requested lease not found": nothing of that request was written
          }
          throw e;
        });
  }

  /**
   * Sends {@code children} as transactions of {@code perTxn} nested transactions each, all at once;
   * one answer per child, in order (null for every child of a request {@code onError} answered null).
   * etcd counts a nested transaction's operations against its parent's limit ({@code k} children of
   * {@code m} operations each need {@code k + m <= --max-txn-ops}).
   *
   * <p>Each request also carries a flat delete of the {@linkplain KeyLayout#writeGuardKey write
   * guard}, a key that never exists (so it deletes nothing): etcd 3.4 checks RBAC only for a
   * transaction's own operations, not for those nested in it (etcd-io/etcd#21689), so without it a
   * user with read-only access would acquire and release leases. With it, a user without write
   * permission on the prefix gets {@code PERMISSION_DENIED} for the whole request, before anything
   * is applied.
   */
  private List<@Nullable TxnResponse> nested(List<Op> children, int perTxn, Calls.Budget budget,
      String what, Function<LeaseStoreUnavailableException, @Nullable TxnResponse> onError) {
    List<List<Op>> chunks = chunks(children, perTxn);
    List<Supplier<CompletableFuture<TxnResponse>>> requests = new ArrayList<>();
    Op guard = Op.delete(keys.writeGuardKey(), DeleteOption.DEFAULT);
    for (List<Op> chunk : chunks) {
      List<Op> withGuard = new ArrayList<>(chunk.size() + 1);
      withGuard.add(guard);
      withGuard.addAll(chunk);
      Op[] ops = withGuard.toArray(Op[]::new);
      requests.add(() -> kv.txn().Then(ops).commit());
    }
    List<@Nullable TxnResponse> answers = calls.retryingAll(requests, budget, what, onError);
    List<@Nullable TxnResponse> out = new ArrayList<>(children.size());
    for (int i = 0; i < chunks.size(); i++) {
      TxnResponse r = answers.get(i);
      if (r == null) {
        out.addAll(Collections.nCopies(chunks.get(i).size(), null));
      } else {
        out.addAll(r.getTxnResponses());
      }
    }
    return out;
  }

  private static <T> List<List<T>> chunks(List<T> all, int size) {
    List<List<T>> out = new ArrayList<>();
    for (int i = 0; i < all.size(); i += size) {
      out.add(all.subList(i, Math.min(all.size(), i + size)));
    }
    return out;
  }

  /**
   * The lease keys of {@code names} (absent ones left out), each read linearizably. Up to
   * {@value #MAX_TXN_OPS} names: one read-only transaction of gets. More: a range over the span of
   * their keys, in pages sized to stay under gRPC's default 4 MiB answer; if the span turns out
   * crowded with other names' keys (more than twice the batch scanned), the rest is read with
   * transactions of gets, all sent at once.
   */
  private Map<String, KeyValue> readKeys(List<String> names, Calls.Budget budget) {
    Map<ByteSequence, String> byKey = new HashMap<>();
    List<byte[]> sorted = new ArrayList<>();
    int longest = 0;
    for (String n : names) {
      ByteSequence key = keys.leaseKey(n);
      byKey.put(key, n);
      sorted.add(key.getBytes());
      longest = Math.max(longest, key.size());
    }
    if (names.size() <= MAX_TXN_OPS) {
      return gets(names, byKey, budget);
    }
    sorted.sort(Arrays::compareUnsigned);
    ByteSequence end = after(sorted.get(sorted.size() - 1));
    int page = Math.max(MAX_TXN_OPS, Math.min(MAX_BATCH_SIZE,
        RANGE_PAGE_BYTES / (longest + 4 * HolderId.MAX_LENGTH + 64)));
    Map<String, KeyValue> found = new HashMap<>();
    byte[] from = sorted.get(0);
    long scanned = 0;
    while (true) {
      ByteSequence start = ByteSequence.from(from);
      GetResponse r = calls.retrying(() -> kv.get(start,
          GetOption.builder().withRange(end).withLimit(page).build()), budget,
          "read " + names.size() + " leases");
      for (KeyValue x : r.getKvs()) {
        String n = byKey.get(x.getKey());
        if (n != null) {
          found.put(n, x);
        }
      }
      scanned += r.getKvs().size();
      if (!r.isMore() || r.getKvs().isEmpty()) {
        return found;
      }
      from = after(r.getKvs().get(r.getKvs().size() - 1).getKey().getBytes()).getBytes();
      if (scanned > 2L * names.size()) {
        byte[] rest = from;
        List<String> left = new ArrayList<>();
        for (String n : names) {
          if (Arrays.compareUnsigned(keys.leaseKey(n).getBytes(), rest) >= 0) {
            left.add(n);
          }
        }
        found.putAll(gets(left, byKey, budget));
        return found;
      }
    }
  }

  /** The keys of {@code names} by transactions of {@value #MAX_TXN_OPS} gets, all sent at once. */
  private Map<String, KeyValue> gets(List<String> names, Map<ByteSequence, String> byKey,
      Calls.Budget budget) {
    if (names.size() == 1) {
      KeyValue x = first(calls.retrying(() -> kv.get(keys.leaseKey(names.get(0))), budget,
          "read lease '" + names.get(0) + "'"));
      return x == null ? Map.of() : Map.of(names.get(0), x);
    }
    List<Supplier<CompletableFuture<TxnResponse>>> requests = new ArrayList<>();
    for (List<String> chunk : chunks(names, MAX_TXN_OPS)) {
      Op[] ops = chunk.stream().map(n -> Op.get(keys.leaseKey(n), GetOption.DEFAULT))
          .toArray(Op[]::new);
      requests.add(() -> kv.txn().Then(ops).commit());
    }
    Map<String, KeyValue> found = new HashMap<>();
    for (TxnResponse r : calls.retryingAll(requests, budget, names.size() == 1
        ? "read lease '" + names.get(0) + "'" : "read " + names.size() + " leases", e -> {
          throw e;
        })) {
      for (GetResponse g : r.getGetResponses()) {
        KeyValue x = first(g);
        if (x != null) {
          found.put(byKey.get(x.getKey()), x);
        }
      }
    }
    return found;
  }

  private static ByteSequence after(byte[] key) {
    return ByteSequence.from(Arrays.copyOf(key, key.length + 1));
  }

  /**
   * Who holds each refused name and for how long: holder and token as read with the key, the
   * remaining TTL by one {@code LeaseTimeToLive} per distinct etcd lease, all sent at once. Empty
   * for a name whose etcd lease is already gone or whose key this store did not write.
   */
  private Map<String, Optional<LeaseState.Held>> heldBy(Map<String, KeyValue> refused,
      Calls.Budget budget) {
    List<Long> ids = refused.values().stream().map(KeyValue::getLease).filter(id -> id != 0)
        .distinct().toList();
    List<Supplier<CompletableFuture<LeaseTimeToLiveResponse>>> requests = new ArrayList<>();
    for (long id : ids) {
      requests.add(() -> leases.timeToLive(id, LeaseOption.DEFAULT));
    }
    List<@Nullable LeaseTimeToLiveResponse> answers = calls.retryingAll(requests, budget,
        "read the TTL of " + ids.size() + " etcd lease(s)", e -> null);
    Map<Long, Long> seconds = new HashMap<>();
    for (int i = 0; i < ids.size(); i++) {
      LeaseTimeToLiveResponse t = answers.get(i);
      seconds.put(ids.get(i), t == null ? -1 : remainingSeconds(t));
    }
    Map<String, Optional<LeaseState.Held>> out = new HashMap<>();
    Instant now = Instant.now();
    refused.forEach((n, x) -> {
      long s = seconds.getOrDefault(x.getLease(), -1L);
      Optional<HolderId> holder = holderIfOurs(x);
      out.put(n, s <= 0 || holder.isEmpty() ? Optional.empty()
          : Optional.of(new LeaseState.Held(n, holder.get(), x.getCreateRevision(),
              now.plusSeconds(s), Duration.ofSeconds(s))));
    });
    return out;
  }

  /**
   * Releases {@code name} if {@code holder} has it: a one-name {@link #releaseAll}. The shared etcd
   * lease stays (other names may be on it); once this store has no name on it, it lingers for the
   * holder's next acquire, unkept, as the class comment says.
   */
  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    return releaseNames(List.of(name), holder).get(name);
  }

  /**
   * Releases every name {@code holder} has: one read of the keys (as in
   * {@link #acquireOrRenewAll}), then transactions of {@value #RELEASE_PER_TXN} nested per-name
   * transactions, all sent at once, each deleting the key only if it is still the tenure read (same
   * {@code create_revision} and holder) and recording the release with its token in the companion
   * key, in the same transaction. A lease whose TTL ran out but that etcd has not revoked yet is
   * still in the store and is released like a live one.
   */
  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    ensureOpen();
    if (checked.isEmpty()) {
      return Map.of();
    }
    return Collections.unmodifiableMap(releaseNames(checked, holder));
  }

  private Map<String, Boolean> releaseNames(List<String> names, HolderId holder) {
    ByteSequence holderValue = utf8(holder.value());
    Calls.Budget budget = calls.budget();
    Map<String, KeyValue> current = readKeys(names, budget);
    Map<String, Boolean> results = new LinkedHashMap<>();
    List<String> ours = new ArrayList<>();
    List<ByteSequence> releasedValues = new ArrayList<>();
    List<Op> children = new ArrayList<>();
    for (String n : names) {
      results.put(n, false);
      KeyValue kv = current.get(n);
      if (kv == null || !kv.getValue().equals(holderValue)) {
        continue;
      }
      long token = kv.getCreateRevision();
      ByteSequence key = keys.leaseKey(n);
      ByteSequence lastKey = keys.lastKey(n);
      ByteSequence released = LastTenure.released(token, holder);
      ours.add(n);
      releasedValues.add(released);
      // Safe to repeat: a repeat after a lost answer finds our own release in the companion key.
      children.add(Op.txn(new Cmp[] {new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(token)),
              new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(holderValue))},
          new Op[] {Op.delete(key, DeleteOption.DEFAULT), Op.put(lastKey, released, PutOption.DEFAULT)},
          new Op[] {Op.get(lastKey, GetOption.DEFAULT)}));
    }
    if (!children.isEmpty()) {
      List<@Nullable TxnResponse> answers = nested(children, RELEASE_PER_TXN, budget, ours.size() == 1
          ? "release '" + ours.get(0) + "'" : "release " + ours.size() + " leases", e -> {
            throw e;
          });
      for (int i = 0; i < ours.size(); i++) {
        TxnResponse r = answers.get(i);
        KeyValue last = r.isSucceeded() ? null : first(r.getGetResponses().get(0));
        results.put(ours.get(i), r.isSucceeded()
            || (last != null && last.getValue().equals(releasedValues.get(i))));
      }
    }
    // only a name actually released leaves its shared lease lingering for the next acquire; one
    // found lost (its key gone or another holder's) retires the lease if nothing else is on it
    List<String> released = new ArrayList<>();
    List<String> notReleased = new ArrayList<>();
    results.forEach((n, ok) -> (ok ? released : notReleased).add(n));
    shared.unhint(holder, notReleased, false);
    shared.unhint(holder, released, true);
    return results;
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
      long seconds = remainingSeconds(t);
      if (seconds < 0) {
        if (round < MAX_ROUNDS - 1) {
          continue; // revoked between the two reads: read again
        }
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
   * The names etcd keeps a record of, as {@link LeaseListing} describes: those with a companion
   * key ({@code <keyPrefix>/last/}, written by every acquire and never deleted by this library, so
   * held, expired and released names) or a lease key ({@code <keyPrefix>/lease/}, so that a held
   * name is listed even after its companion key was deleted by hand). Fence and run-ledger keys,
   * keys of stores under longer prefixes and keys this store did not write are skipped.
   *
   * <p><b>Cost.</b> The key encoding does not keep code-point order (an escaped byte, {@code %XX},
   * sorts before every plain character in etcd's byte order, so {@code job/1} comes before
   * {@code job-a} there but after it here): etcd's order is therefore not the answer's, and to
   * keep the limit exact every key of both ranges under the prefix is read (keys only), decoded,
   * and the {@code limit} smallest names kept. Both ranges are read by one read-only transaction
   * per page of about 800 keys each (sized to stay under gRPC's 4 MiB
   * answer); a prefix with a million names costs a thousand or more round trips, so list under a
   * narrow prefix or raise {@code callTimeout}: the whole call is bounded by it, and a listing
   * that does not finish in time throws {@link LeaseStoreUnavailableException}. Pages are read
   * at successive revisions (a snapshot per page, not of the whole answer). Needs {@code read} on
   * {@code <keyPrefix>/}, as {@link #inspect} does.
   */
  @Override
  public List<String> names(String prefix, int limit) {
    LeaseListing.requireListing(prefix, limit);
    ensureOpen();
    Calls.Budget budget = calls.budget();
    String what = "list the lease names starting with '" + LastTenure.abbreviate(prefix) + "'";
    TreeSet<String> smallest = new TreeSet<>(LeaseListing.CODE_POINT_ORDER);
    Map<KeyLayout.Named, ByteSequence> next = new EnumMap<>(KeyLayout.Named.class);
    for (KeyLayout.Named kind : KeyLayout.Named.values()) {
      next.put(kind, keys.namedFrom(kind, prefix));
    }
    while (!next.isEmpty()) {
      List<KeyLayout.Named> kinds = List.copyOf(next.keySet());
      Op[] ops = new Op[kinds.size()];
      for (int i = 0; i < ops.length; i++) {
        KeyLayout.Named kind = kinds.get(i);
        ops[i] = Op.get(next.get(kind), GetOption.builder()
            .withRange(OptionsUtil.prefixEndOf(keys.namedFrom(kind, prefix)))
            .withLimit(LIST_PAGE_KEYS).withKeysOnly(true).build());
      }
      TxnResponse r = calls.retrying(() -> kv.txn().Then(ops).commit(), budget, what);
      for (int i = 0; i < ops.length; i++) {
        KeyLayout.Named kind = kinds.get(i);
        GetResponse page = r.getGetResponses().get(i);
        for (KeyValue x : page.getKvs()) {
          String name = keys.nameOf(kind, x.getKey());
          if (name != null && smallest.add(name) && smallest.size() > limit) {
            smallest.pollLast();
          }
        }
        if (page.isMore() && !page.getKvs().isEmpty()) {
          next.put(kind, after(page.getKvs().get(page.getKvs().size() - 1).getKey().getBytes()));
        } else {
          next.remove(kind);
        }
      }
    }
    return List.copyOf(smallest);
  }

  /** The largest {@code limit} {@link #history} accepts. */
  public static final int MAX_HISTORY = 1000;

  /**
   * The changes of lease {@code name} that etcd still keeps, newest first, up to {@code limit}:
   * each grant (a new tenure, its token), rewrite of the key within a tenure, release and expiry,
   * with the holder, the token and the etcd lease the key was on. etcd keeps every revision of a
   * key until it is compacted ({@code --auto-compaction-*}, or {@code etcdctl compact}); the
   * revisions below the compact revision are gone, and the answer then says where it stopped
   * ({@link EtcdLeaseHistory#compactRevision()}) instead of failing. Ordinary renewals write
   * nothing (they keep the etcd lease alive), so they are not changes.
   *
   * <p><b>How it is read.</b> Every read is at a fixed past revision, so the answer is a snapshot
   * at the revision of the first read, whatever happens meanwhile; a grant racing with the call is
   * not in it. The walk goes back through the versions of the lease key and of the companion key
   * ({@code <keyPrefix>/last/}, which every acquire and release writes in the same transaction as
   * the lease key): one read per change, and for an expiry, whose revision etcd records only as a
   * deletion of the lease key, a binary search for it between the tenure's grant and the next
   * record (about log2 of the revisions in between, e.g. 20 reads across a million). Reaching the
   * compaction costs another such search, for the compact revision. Keys written by hand are
   * reported as etcd saw them, as far as the companion key tells; a hand-deleted companion key
   * ends the walk there, as if nothing came before. The whole call is bounded by the call timeout
   * and fails with {@link LeaseStoreUnavailableException} if it cannot finish in time (lower the
   * limit or raise {@code callTimeout}); it starts no watch and no thread. Needs {@code read} on
   * {@code <keyPrefix>/}, as {@link #inspect} does.
   *
   * <p><b>Races.</b> The answer is as of {@link EtcdLeaseHistory#revision()}: a grant, release or
   * expiry after it is missing, so {@link #inspect} right after may show a newer state, and the
   * newest change is not a claim about now. A lease whose TTL ran out but that etcd has not
   * revoked yet (up to about half a second) still ends in its grant or rewrite. A compaction
   * during the call ends the walk where it could still read, reported as the compact revision.
   *
   * @param limit 1 to {@value #MAX_HISTORY} changes, the newest
   * @throws IllegalArgumentException for a malformed name or a limit out of range
   * @throws IllegalStateException if the lease key or the companion key holds a value this
   *     library did not write (as {@link #inspect} does)
   */
  public EtcdLeaseHistory history(String name, int limit) {
    LeaseArguments.requireName(name);
    if (limit < 1 || limit > MAX_HISTORY) {
      throw new IllegalArgumentException(
          "limit must be 1 to " + MAX_HISTORY + " changes, got " + limit);
    }
    ensureOpen();
    Calls.Budget budget = calls.budget();
    String what = "read the history of lease '" + name + "'";
    Snapshot s = snapshot(name, 0, budget, what);
    long revision = s.revision();
    long readable = revision; // the lowest revision read so far
    List<EtcdLeaseHistory.Change> changes = new ArrayList<>();
    try {
      while (s.lease != null || s.last != null) {
        if (changes.size() == limit) {
          return new EtcdLeaseHistory(name, revision, changes, 0, true);
        }
        long at;
        if (s.lease != null) {
          KeyValue kv = requireOurs(s.lease);
          changes.add(new EtcdLeaseHistory.Change(kv.getModRevision(),
              kv.getModRevision() == kv.getCreateRevision() ? EtcdLeaseHistory.Kind.GRANTED
                  : EtcdLeaseHistory.Kind.REWRITTEN,
              holderOf(kv), kv.getCreateRevision(), kv.getLease()));
          at = kv.getModRevision() - 1;
        } else {
          // the key is gone: the companion's latest version says by which tenure and how
          LastTenure last = LastTenure.parse(s.last);
          long deleted = last.released() ? s.last.getModRevision()
              : firstAbsent(name, last.token(), readable, budget, what);
          at = deleted - 1;
          // the etcd lease the key was on is in the version before the deletion
          Compacted gone = null;
          Snapshot before = null;
          try {
            before = at < 1 ? null : snapshot(name, at, budget, what);
          } catch (Compacted c) {
            gone = c;
          }
          long leaseId = before != null && before.lease != null
              && before.lease.getCreateRevision() == last.token() ? before.lease.getLease() : 0;
          changes.add(new EtcdLeaseHistory.Change(deleted, last.released()
              ? EtcdLeaseHistory.Kind.RELEASED : EtcdLeaseHistory.Kind.EXPIRED,
              last.holder(), last.token(), leaseId));
          if (gone != null) {
            throw gone;
          }
          if (before == null) {
            break;
          }
          s = before;
          readable = at;
          continue;
        }
        if (at < 1) {
          break;
        }
        s = snapshot(name, at, budget, what);
        readable = at;
      }
      return new EtcdLeaseHistory(name, revision, changes, 0, false);
    } catch (Compacted c) {
      return new EtcdLeaseHistory(name, revision, changes,
          compactRevision(name, c.revision, readable, budget, what), false);
    }
  }

  /** A read below etcd's compact revision: etcd no longer has that revision. */
  private static final class Compacted extends RuntimeException {
    final long revision;

    Compacted(long revision, Throwable cause) {
      super("revision " + revision + " is compacted", cause, false, false);
      this.revision = revision;
    }
  }

  /**
   * The revision at which the lease key of a tenure granted at {@code token} was deleted: the
   * first revision in ({@code token}, {@code absentAt}] without the key (it is absent at
   * {@code absentAt}). Binary search: no other tenure began in between (every acquire writes the
   * companion key, whose latest version is this tenure's), so the key is there up to the deletion
   * and gone after.
   */
  private long firstAbsent(String name, long token, long absentAt, Calls.Budget budget,
      String what) {
    return firstWhere(token + 1, absentAt, r -> countAt(name, r, budget, what) == 0);
  }

  /**
   * etcd's compact revision, the lowest it can still read: between {@code compacted} (refused) and
   * {@code readable} (read), by binary search. Compaction may move on meanwhile; then this is the
   * revision the walk could read down to.
   */
  private long compactRevision(String name, long compacted, long readable, Calls.Budget budget,
      String what) {
    return firstWhere(compacted + 1, readable, r -> {
      try {
        countAt(name, r, budget, what);
        return true;
      } catch (Compacted c) {
        return false;
      }
    });
  }

  /**
   * The least revision in [{@code lo}, {@code hi}] where {@code holds}, which must be false below
   * some revision and true from it on, and true at {@code hi}: by binary search.
   */
  private static long firstWhere(long lo, long hi, java.util.function.LongPredicate holds) {
    while (lo < hi) {
      long mid = lo + (hi - lo) / 2;
      if (holds.test(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return hi;
  }

  /** Whether the lease key exists at {@code revision} (1 or 0); {@link Compacted} if gone. */
  private long countAt(String name, long revision, Calls.Budget budget, String what) {
    ByteSequence key = keys.leaseKey(name);
    GetOption at = GetOption.builder().withRevision(revision).withCountOnly(true).build();
    return compactedAt(revision, () -> calls.retrying(() -> kv.get(key, at), budget, what))
        .getCount();
  }

  /** Runs a read at {@code revision}, turning etcd's "revision has been compacted" into {@link Compacted}. */
  private static <T> T compactedAt(long revision, Supplier<T> read) {
    try {
      return read.get();
    } catch (LeaseStoreUnavailableException e) {
      if (Calls.code(e) == ErrorCode.OUT_OF_RANGE) {
        throw new Compacted(revision, e);
      }
      throw e;
    }
  }

  /**
   * Runs {@code listener} when the lease key is deleted: released, expired, or deleted by hand. One
   * watch serves every listener of a name; listeners run one at a time on the store's own thread
   * ({@code leases-etcd-listener-*}), and one that throws is logged and stays subscribed. By the
   * time a listener runs someone else may already hold the lease. Sends nothing itself: the watch
   * is set up in the background, and starts at the revision after the newest answer this store had
   * received, so a release etcd applied after that answer (the refusal that made a follower
   * subscribe, say) is heard even if it reaches etcd before the watch does, and one applied
   * between that answer and this call wakes the new listener too. If etcd has compacted that
   * revision away, listeners run once and the watch goes on from the compaction. A watch that
   * breaks is resumed by jetcd; events may still be lost, so followers must poll until the expiry
   * they last read.
   */
  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    ensureOpen();
    Subscription added;
    synchronized (watchers) {
      ensureOpen();
      if (!watchers.containsKey(name)) {
        watchers.put(name, watchReleases(name, calls.seenRevision()));
      }
      added = listeners.add(name, listener);
    }
    return () -> {
      synchronized (watchers) {
        added.close();
        if (!listeners.has(name)) {
          Watch.Watcher w = watchers.remove(name);
          if (w != null) {
            w.close();
          }
        }
      }
    };
  }

  /**
   * A watch of {@code name}'s deletes from the revision after {@code after} (from the present when
   * 0). One that etcd cancels because that revision was compacted away is replaced by one from the
   * compaction, and the listeners run once: a release may have been among the changes lost.
   */
  private Watch.Watcher watchReleases(String name, long after) {
    WatchOption.Builder option = WatchOption.builder().withNoPut(true);
    if (after > 0) {
      option.withRevision(after + 1);
    }
    AtomicReference<Watch.@Nullable Watcher> self = new AtomicReference<>();
    try {
      Watch.Watcher w = watch.watch(keys.leaseKey(name), option.build(),
          Watch.listener(response -> {
            if (response.getEvents().stream()
                .anyMatch(e -> e.getEventType() == WatchEvent.EventType.DELETE)) {
              listeners.fire(name, listenerThread);
            }
          }, error -> {
            if (error instanceof CompactedException c) {
              afterCompaction(name, self, c.getCompactedRevision());
            } else {
              log.debug("watch on lease '{}' failed: {}", name, error.toString());
            }
          }));
      self.set(w);
      return w;
    } catch (RuntimeException e) {
      ensureOpen();
      throw new LeaseStoreUnavailableException("cannot watch lease '" + name + "': " + e, e);
    }
  }

  private void afterCompaction(String name, AtomicReference<Watch.@Nullable Watcher> cancelled,
      long compactedAt) {
    try {
      listenerThread.execute(() -> {
        synchronized (watchers) {
          // set before the watchers lock is let go; a watch replaced or unsubscribed is left alone
          if (closed.get() || watchers.get(name) != cancelled.get()) {
            return;
          }
          try {
            watchers.put(name, watchReleases(name, compactedAt - 1));
          } catch (RuntimeException e) {
            watchers.remove(name);
            log.warn("lost the watch on lease '{}' (its start was compacted, and watching again"
                + " failed: {}); its release listeners get no more hints", name, e.toString());
          }
        }
        listeners.fire(name, listenerThread);
      });
    } catch (RejectedExecutionException closing) {
      // closed: no more hints
    }
  }

  /**
   * Closes the watches, revokes the shared etcd leases that carry no name (those lingering after
   * their last release, see the class comment) and, if this store built its client, closes the
   * client. It waits up to 1 s for the background revocations. Leases that carry names stay in etcd
   * until they are released or expire. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<Watch.Watcher> open;
    synchronized (watchers) {
      open = List.copyOf(watchers.values());
      watchers.clear();
      listeners.clear();
    }
    for (Watch.Watcher w : open) {
      try {
        w.close();
      } catch (RuntimeException e) {
        log.debug("closing a watch failed", e);
      }
    }
    shared.retireIdle();
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
    if (ownsClient) {
      clientClosed = true;
      opened.closeOwned();
    }
    listenerThread.shutdown();
  }

  @Override
  public String toString() {
    return "EtcdLeaseStore[prefix=" + keys.prefix() + ", callTimeout=" + calls.timeout() + "]";
  }

  // ---------------------------------------------------------------- helpers

  /** The lease key and the companion key (null if absent), read at etcd revision {@code revision}. */
  private record Snapshot(@Nullable KeyValue lease, @Nullable KeyValue last, long revision) {

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

  /** The lease key and the companion key read at one revision, the latest. */
  private Snapshot snapshot(String name, Calls.Budget budget) {
    return snapshot(name, 0, budget, "read lease '" + name + "'");
  }

  /**
   * The lease key and the companion key as they were at {@code at} (0: the latest), read in one
   * transaction; {@link Snapshot#revision()} is the revision of the read (the latest). A revision
   * etcd compacted throws {@link Compacted}.
   */
  private Snapshot snapshot(String name, long at, Calls.Budget budget, String what) {
    ByteSequence key = keys.leaseKey(name);
    ByteSequence lastKey = keys.lastKey(name);
    GetOption option = at == 0 ? GetOption.DEFAULT : GetOption.builder().withRevision(at).build();
    TxnResponse r = compactedAt(at, () -> calls.retrying(() -> kv.txn()
        .Then(Op.get(key, option), Op.get(lastKey, option))
        .commit(), budget, what));
    List<GetResponse> gets = r.getGetResponses();
    return new Snapshot(first(gets.get(0)), first(gets.get(1)), r.getHeader().getRevision());
  }

  /**
   * Whole seconds until an etcd lease expires, an upper bound (etcd truncates: it expires in under
   * TTL + 1 s, and never later than its granted TTL); -1 once it is gone.
   */
  private static long remainingSeconds(LeaseTimeToLiveResponse t) {
    if (t.getTTL() < 0) {
      return -1;
    }
    long seconds = t.getTTL() + 1;
    return t.getGrantedTTL() > 0 ? Math.min(seconds, t.getGrantedTTL()) : seconds;
  }

  /** The holder of a key this store wrote; empty for a key it did not write. */
  private static Optional<HolderId> holderIfOurs(KeyValue kv) {
    try {
      return kv.getLease() == 0 ? Optional.empty() : Optional.of(holderOf(kv));
    } catch (IllegalStateException e) {
      return Optional.empty();
    }
  }

  private static @Nullable KeyValue first(GetResponse r) {
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
    if (clientClosed) {
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
      String shown = e.replaceAll("//[^/]*@", "//(credentials removed)@"); // never echo a password
      try {
        uri = URI.create(e.trim());
      } catch (IllegalArgumentException ex) {
        // the parser's message quotes the input: keep it out of the chain when it has credentials
        throw new IllegalArgumentException("etcd endpoint '" + shown + "' is not a URI; use"
            + " \"http://host:port\"", shown.equals(e) ? ex : null);
      }
      boolean scheme = "http".equalsIgnoreCase(uri.getScheme())
          || "https".equalsIgnoreCase(uri.getScheme());
      if (!scheme || uri.getHost() == null || uri.getPort() <= 0
          || (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/"))
          || uri.getQuery() != null || uri.getUserInfo() != null) {
        throw new IllegalArgumentException("etcd endpoint '" + shown + "' must look like"
            + " \"http://host:port\" or, for TLS, \"https://host:port\" (no path, query or"
            + " credentials: give those with user(...) and tls(...))");
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

    /**
     * Authenticates as etcd user {@code user} (for a cluster with authentication enabled; see
     * {@link EtcdRoles} for the grants it needs). jetcd sends the password once per auth token
     * (again after the token expires, {@code --auth-token-ttl} of idleness); it is never logged or
     * put in a message. Only for {@code builder(String... endpoints)}.
     */
    public Builder user(String user, String password) {
      settings.user(user, password);
      return this;
    }

    /**
     * TLS to {@code https://} endpoints, trusting the authority in {@code trustCertPem} (a PEM file;
     * null: the JDK's default trust store). The server's certificate must name the endpoint's host
     * (subject alternative name). Only for {@code builder(String... endpoints)}.
     */
    public Builder tls(@Nullable Path trustCertPem) {
      settings.tls(trustCertPem, null, null);
      return this;
    }

    /**
     * Mutual TLS to {@code https://} endpoints: as {@link #tls(Path)}, and this client presents
     * {@code clientCertPem} (PEM, the chain up to but excluding the authority) with
     * {@code clientKeyPem} (unencrypted PKCS#8 PEM, {@code -----BEGIN PRIVATE KEY-----}; keep it
     * 0600). With {@code --client-cert-auth} and authentication enabled but no {@link #user}, etcd
     * takes the certificate's common name as the user name.
     */
    public Builder tls(@Nullable Path trustCertPem, Path clientCertPem, Path clientKeyPem) {
      settings.mutualTls(trustCertPem, clientCertPem, clientKeyPem);
      return this;
    }

    /** The store; see the class comment for what it does on first use. */
    public EtcdLeaseStore build() {
      return new EtcdLeaseStore(settings.open());
    }
  }
}
