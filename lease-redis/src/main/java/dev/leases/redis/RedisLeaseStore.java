package dev.leases.redis;

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
import dev.leases.spi.SecretSetting;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisCredentialsProvider;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases on a Redis primary, through Lettuce: one Lua script per operation, expiry by the server's
 * clock ({@code PEXPIREAT} computed from {@code TIME}), and fencing tokens from a per-name counter
 * that is clamped up to the server's time in milliseconds.
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>Expiry is judged by the Redis server's clock, never by this process's.
 *   <li>A renewal by the same holder while its lease key lives keeps the token; every other grant
 *       (another holder, after release, after the holder's own expiry, after an out-of-band
 *       {@code DEL} of the lease key) gets a larger token.
 *   <li>Tokens do not go backwards when the counter is lost with a non-persistent server's restart:
 *       a new token is never below the server's {@code TIME} in ms, and the tokens issued before
 *       were at most that server's time when issued. The clamp holds as long as the server's clock
 *       does not step back and no single name is granted more than 1000 times per second for long
 *       (each grant above that rate puts the counter 1 ms ahead of the clock; a restart erases at
 *       most that lead).
 *   <li>Every call is bounded by the command timeout; after it, or on a connection error, the call
 *       throws {@link LeaseStoreUnavailableException} and its outcome is unknown. A store built from
 *       a URI rejects commands while disconnected and never replays them after a reconnect.
 * </ul>
 *
 * <h2>Limits</h2>
 * <ul>
 *   <li><b>Single primary.</b> Correctness rests on one primary per lease (standalone, or the slot's
 *       primary in a cluster). No Redlock.
 *   <li><b>Failover loses grants.</b> Redis replication is asynchronous: a replica promoted after a
 *       primary failure may lack the latest grant, renewal or release. Two holders can then both
 *       believe they lead until the older one's next renewal fails. The fencing token is what
 *       rejects the stale one: the new grant's token is clamped to the new primary's {@code TIME},
 *       hence larger than anything the old primary issued earlier (given reasonably synchronised
 *       server clocks), and a resource that checks tokens ({@link RedisFence}) refuses the other.
 *   <li><b>Hints are hints.</b> {@link #onRelease} is fed by {@code PUBLISH}; a message sent while
 *       the subscriber is disconnected is lost, and expiry or an out-of-band delete publishes
 *       nothing. Followers must still poll until the expiry they last read.
 *   <li>Each name ever used leaves two small non-expiring keys (the counter and the last-tenure
 *       record); deleting the counter by hand weakens the ordering to the {@code TIME} clamp.
 * </ul>
 *
 * <p>Key layout: see {@link #keysOf(String)}. All keys of a name share one hash tag in which the
 * name is percent-encoded, so any name (braces, spaces, non-ASCII) is safe and stays in one slot.
 *
 * <p>Thread-safe. Calls after {@link #close()} throw {@link LeaseStoreClosedException}.
 */
public final class RedisLeaseStore implements LeaseStore, LeaseListing {

  /** Accepts TTLs from 1 ms to 365 days, in whole milliseconds (a request is rounded up). */
  public static final TtlRange TTL_RANGE =
      new TtlRange(Duration.ofMillis(1), Duration.ofDays(365), Duration.ofMillis(1));

  /** Key prefix used unless {@link Builder#keyPrefix(String)} says otherwise. */
  public static final String DEFAULT_KEY_PREFIX = "leases";

  /** Command timeout used unless {@link Builder#commandTimeout(Duration)} says otherwise. */
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

  /** Longest accepted command timeout. */
  public static final Duration MAX_COMMAND_TIMEOUT = Duration.ofMinutes(5);

  private static final Logger log = LoggerFactory.getLogger(RedisLeaseStore.class);
  private static final Duration PUBSUB_RETRY = Duration.ofSeconds(1);
  /**
   * {@code SCAN}'s {@code COUNT} for {@link #names}: about this many keys visited per call, each
   * call blocking the server for a fraction of a millisecond.
   */
  static final int SCAN_COUNT = 1000;

  private final KeyLayout keys;
  private final Duration timeout;
  private final Connector connector;
  /** Who this store is to Redis and what to grant it, for refusals. */
  private final LuaScript.Caller caller;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Object connectLock = new Object();
  private final Object pubSubLock = new Object();
  private final ReleaseListeners listeners = new ReleaseListeners();

  private volatile Connector.@Nullable Commands commands;
  private volatile @Nullable StatefulRedisPubSubConnection<String, String> pubSub;
  private volatile @Nullable ScheduledExecutorService events; // created under pubSubLock
  private boolean pubSubRetryScheduled; // guarded by pubSubLock
  private boolean deniedLogged; // guarded by pubSubLock

  private RedisLeaseStore(Builder b, Connector connector) {
    this.keys = new KeyLayout(b.keyPrefix);
    this.timeout = b.commandTimeout;
    this.connector = connector;
    String user = b.userName();
    this.caller = new LuaScript.Caller("Redis user '" + user + "'", "Grant it the rules of"
        + " RedisAcl.rules(\"" + keys.prefix() + "\", HOLDER) (OBSERVER for reads only): "
        + RedisAcl.setUserCommand(user, keys.prefix(), RedisAcl.Access.HOLDER),
        this::closedOrNull);
  }

  /**
   * A store that creates and owns its Lettuce client: it rejects commands while disconnected (no
   * replay of a stale acquire after a reconnect), reconnects with a backoff capped at 1 s, and is
   * shut down completely by {@link #close()}.
   *
   * @param redisUri e.g. {@code redis://127.0.0.1:6379/0} or {@code rediss://user:pw@host:6380}
   */
  public static Builder builder(String redisUri) {
    Objects.requireNonNull(redisUri, "redisUri must not be null");
    final RedisURI uri;
    try {
      uri = RedisURI.create(redisUri);
    } catch (RuntimeException e) {
      // Lettuce's message quotes the URI, password and all: redact it, and drop the cause
      throw new IllegalArgumentException("cannot parse Redis URI (expected redis://host:port[/db]"
          + " or rediss://...): " + redactUserInfo(String.valueOf(e.getMessage()), redisUri));
    }
    Builder b = new Builder(uri, null, null);
    b.parsed = true;
    return b;
  }

  /** {@code text} with the user info of {@code uri} (between {@code ://} and the last {@code @}) masked. */
  static String redactUserInfo(String text, String uri) {
    int start = uri.indexOf("://");
    int at = uri.lastIndexOf('@');
    if (start < 0 || at <= start + 3) {
      return text;
    }
    return text.replace(uri.substring(start + 3, at), "***");
  }

  /** Like {@link #builder(String)}. */
  public static Builder builder(RedisURI uri) {
    return new Builder(Objects.requireNonNull(uri, "uri must not be null"), null, null);
  }

  /**
   * A store that opens its connections from your client and closes only those on {@link #close()};
   * the client stays yours. Recommended client options: {@code disconnectedBehavior(REJECT_COMMANDS)}
   * so that a command issued while disconnected is not replayed long after its caller gave up.
   */
  public static Builder builder(RedisClient client, RedisURI uri) {
    return new Builder(Objects.requireNonNull(uri, "uri must not be null"),
        Objects.requireNonNull(client, "client must not be null"), null);
  }

  /**
   * A store on a Redis Cluster, through your cluster client (which stays yours). Every lease's keys
   * live in one slot; its primary is the single source of truth for that lease.
   */
  public static Builder builder(RedisClusterClient client) {
    return new Builder(null, null, Objects.requireNonNull(client, "client must not be null"));
  }

  /** Builds a {@link RedisLeaseStore}; nothing connects until the first call. */
  public static final class Builder {
    private final @Nullable RedisURI uri;
    private final @Nullable RedisClient client;
    private final @Nullable RedisClusterClient clusterClient;
    /** Whether {@link #uri} was parsed here from a string. */
    private boolean parsed;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
    private String user;
    private Supplier<String> password;
    private Path trustCert;
    private Path clientCert;
    private Path clientKey;

    private Builder(@Nullable RedisURI uri, @Nullable RedisClient client, @Nullable RedisClusterClient clusterClient) {
      this.uri = uri;
      this.client = client;
      this.clusterClient = clusterClient;
    }

    /**
     * Authenticates as {@code user} (an ACL user, or {@code default} for a server with
     * {@code requirepass}) with {@code password}. Prefer {@link #user(String, Path)}: a password in
     * code or configuration tends to be printed. Not with a URI that has a password, nor with your
     * own client (set the credentials on its {@link RedisURI}).
     */
    public Builder user(String user, String password) {
      Objects.requireNonNull(password, "password must not be null");
      if (password.isEmpty()) {
        throw new IllegalArgumentException("password must not be empty");
      }
      return credentials(user, () -> password);
    }

    /**
     * Authenticates as {@code user} with the password held in {@code passwordFile} (one trailing
     * line break is dropped), read again for every new connection, so that a rotated password is
     * picked up when the store reconnects. The file must be readable now.
     */
    public Builder user(String user, Path passwordFile) {
      return credentials(user,
          SecretSetting.rereadingFile(null, "Redis password file", passwordFile));
    }

    /** Authenticates as {@code user} with the password {@code password} supplies when asked. */
    Builder credentials(String user, Supplier<String> password) {
      ownedClientOnly("user(...)", "set the credentials on your RedisURI");
      if (uriHasPassword()) {
        throw new IllegalArgumentException("the Redis URI carries a password, and user(...) gives"
            + " another: give the password one way (prefer user(name, passwordFile), and a URI"
            + " without user:password@)");
      }
      this.user = RedisAcl.requireName(user);
      this.password = password;
      return this;
    }

    /**
     * TLS for a {@code rediss://} URI: {@code trustCertPem} is the PEM file of the authority that
     * signed the server's certificate (null: the JDK's default trust store); {@code clientCertPem}
     * and {@code clientKeyPem} (both or neither; key unencrypted PKCS#8) a client certificate for
     * servers that demand one ({@code tls-auth-clients yes}, Redis's default). The server's
     * certificate must name the URI's host. A handshake that fails (untrusted certificate, no
     * client certificate) throws {@link LeaseStoreUnavailableException} within the command
     * timeout and says what to check. Not with your own client (set its {@code SslOptions}).
     */
    public Builder tls(Path trustCertPem, Path clientCertPem, Path clientKeyPem) {
      ownedClientOnly("tls(...)", "configure SslOptions on your client");
      if (!uri.isSsl()) {
        throw new IllegalArgumentException("tls(...) needs a rediss:// URI; the URI is "
            + uri.getHost() + ":" + uri.getPort() + " without TLS");
      }
      if ((clientCertPem == null) != (clientKeyPem == null)) {
        throw new IllegalArgumentException("give both the client certificate and its key, or"
            + " neither");
      }
      this.trustCert = readable("trust certificate", trustCertPem);
      this.clientCert = readable("client certificate", clientCertPem);
      this.clientKey = readable("client key", clientKeyPem);
      return this;
    }

    private static Path readable(String what, Path file) {
      if (file != null && !Files.isReadable(file)) {
        throw new IllegalArgumentException(what + " file " + file + " does not exist or is not"
            + " readable");
      }
      return file;
    }

    private void ownedClientOnly(String what, String instead) {
      if (uri == null || client != null) {
        throw new IllegalStateException(what + " applies to a store that owns its client"
            + " (builder(String) or builder(RedisURI)); with your own client, " + instead);
      }
    }

    /**
     * Whether the URI carries a password (user:password@ or :password@) or credentials of its own
     * (a provider that is not immediate counts: it is never called here).
     */
    boolean uriHasPassword() {
      RedisCredentials c = uriCredentials();
      return c == null ? uri != null && uri.getCredentialsProvider() != null : c.hasPassword();
    }

    /** The URI's credentials if they are known without waiting, else null. */
    private RedisCredentials uriCredentials() {
      if (uri == null) {
        return null;
      }
      RedisCredentialsProvider p = uri.getCredentialsProvider();
      if (p instanceof RedisCredentialsProvider.ImmediateRedisCredentialsProvider immediate) {
        return immediate.resolveCredentialsNow();
      }
      if (parsed) { // RedisURI.create's provider is a Mono.just of the URI's user info
        return p.resolveCredentials().block(Duration.ofSeconds(1));
      }
      return null;
    }

    /** The user this store authenticates as, for messages: never a password. */
    String userName() {
      if (user != null) {
        return user;
      }
      RedisCredentials c = uriCredentials();
      return c != null && c.hasUsername() ? c.getUsername() : "default";
    }

    /**
     * The first part of every key and of the release channel ({@code <prefix>:released}); default
     * {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}. 1 to 64 characters from
     * {@code A-Z a-z 0-9 . _ - : /}, not ending in {@code :}. Stores that must see the same leases
     * use the same prefix.
     */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = KeyLayout.requirePrefix(keyPrefix);
      return this;
    }

    /**
     * The bound on every call (connecting included); default 2 s, at most 5 min. A call that has no
     * answer by then throws {@link LeaseStoreUnavailableException}. Keep it well below the TTLs
     * you use, so that a holder learns of trouble while its lease still runs.
     */
    public Builder commandTimeout(Duration commandTimeout) {
      LeaseArguments.requireTimeout("commandTimeout", commandTimeout, MAX_COMMAND_TIMEOUT);
      this.commandTimeout = commandTimeout;
      return this;
    }

    /** The store; it connects on first use. */
    public RedisLeaseStore build() {
      Connector connector;
      if (clusterClient != null) {
        connector = Connector.cluster(clusterClient);
      } else if (client != null) {
        connector = Connector.standalone(client, uri, null);
      } else {
        connector = ownedClient(timeout());
      }
      return new RedisLeaseStore(this, connector);
    }

    private Duration timeout() {
      return commandTimeout;
    }

    private Connector ownedClient(Duration timeout) {
      ClientResources resources = ClientResources.builder()
          .reconnectDelay(Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2,
              TimeUnit.MILLISECONDS))
          .build();
      try {
        RedisURI.Builder ub = RedisURI.builder(uri).withTimeout(timeout);
        if (user != null) {
          String name = user;
          Supplier<String> pw = password;
          ub.withAuthentication(RedisCredentialsProvider.from(
              () -> RedisCredentials.just(name, pw.get())));
        }
        RedisURI withTimeout = ub.build();
        RedisClient c = RedisClient.create(resources, withTimeout);
        ClientOptions.Builder options = ClientOptions.builder();
        if (uri.isSsl()) {
          SslOptions.Builder ssl = SslOptions.builder().jdkSslProvider().handshakeTimeout(timeout);
          if (trustCert != null) {
            ssl.trustManager(trustCert.toFile());
          }
          if (clientCert != null) {
            ssl.keyManager(clientCert.toFile(), clientKey.toFile(), null);
          }
          options.sslOptions(ssl.build());
        }
        c.setOptions(options
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .timeoutOptions(TimeoutOptions.enabled(timeout))
            .socketOptions(SocketOptions.builder().connectTimeout(timeout).keepAlive(true).build())
            .build());
        return Connector.standalone(c, withTimeout, resources);
      } catch (RuntimeException e) {
        resources.shutdown(0, 1, TimeUnit.SECONDS);
        throw e;
      }
    }
  }

  /**
   * Acquires or renews in one script: our live lease → same token, expiry now + ttl; no live lease
   * → a new, larger token; another holder's live lease → empty. The grant's
   * {@link LeaseGrant#expiresAt()} is the server's time of expiry and its ttl the requested one
   * rounded up to whole milliseconds. A key of the name that holds the wrong type (written by
   * something else) throws {@link IllegalStateException}, with nothing changed (a renewal does not
   * check the fence key, which it neither reads nor writes; the next grant does).
   */
  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    long ttlMs = TTL_RANGE.roundUp(TTL_RANGE.check(ttl)).toMillis();
    List<Object> reply = run(Scripts.ACQUIRE_OR_RENEW, ScriptOutputType.MULTI,
        keys.leaseKeyArray(name), holder.value(), Long.toString(ttlMs));
    return acquired(name, holder, ttlMs, onlyEntry(reply, 1), reply, true).grant();
  }

  /**
   * The native batch: each name gets what {@link #acquireOrRenew} gives it, by the same script
   * (the single call is that script with one name). Names go in scripts of at most 100 names —
   * on a cluster, of names whose keys share a slot — sent pipelined on one connection, so a batch
   * costs one round trip to each server involved, however many scripts it takes; one command
   * timeout bounds the whole batch. Each script reads the server's {@code TIME} once and judges its
   * names at that instant; scripts of one batch run one after another, other clients' commands may
   * run between them.
   *
   * <p>A refusal carries {@link AcquireResult.Refused#heldBy() heldBy}: the holder and token read
   * in the same script, and the expiry as that script's {@code TIME} plus the lease key's
   * {@code PTTL} (by the server's clock; early by at most the script's run time, never late). It is
   * empty only when the stored lease is not this library's shape (no expiry, no token).
   *
   * <p><b>A key of the wrong type</b> (something else wrote a key of the name; for a renewal, the
   * lease or last-tenure key) refuses that name alone, {@code heldBy} empty, with nothing of it
   * changed, and logs a warning naming the key;
   * the other names get their outcomes. (The single call throws instead. Failing the batch would
   * stand down every name a {@link dev.leases.leader.LeaseGroup} holds over one foreign key.)
   *
   * <p>If the call throws, the outcome of every name is unknown: scripts that were sent may have
   * run.
   */
  @Override
  public Map<String, AcquireResult> acquireOrRenewAll(
      Collection<String> names, HolderId holder, Duration ttl) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    long ttlMs = TTL_RANGE.roundUp(TTL_RANGE.check(ttl)).toMillis();
    String[] args = {holder.value(), Long.toString(ttlMs)};
    return batch(Scripts.ACQUIRE_OR_RENEW, checked, keys::leaseKeys, group -> args, 1,
        (name, entry, reply) -> acquired(name, holder, ttlMs, entry, reply, false));
  }

  /**
   * The outcome for {@code name} from its entry of the acquire script's {@code reply}, whose first
   * element is the expiry of its grants; a key of the wrong type throws for the single call
   * ({@code single}), else refuses that name (see {@link #foreignKey}).
   */
  private static AcquireResult acquired(String name, HolderId holder, long ttlMs, Object entry,
      List<Object> reply, boolean single) {
    if (entry instanceof Long token) {
      return new AcquireResult.Granted(new LeaseGrant(name, holder, token,
          Instant.ofEpochMilli(number(reply, 0)), Duration.ofMillis(ttlMs)));
    }
    List<Object> e = entry instanceof List<?> l ? cast(l) : List.of();
    long status = number(e, 0);
    if (status == 2) {
      foreignKey(Scripts.ACQUIRE_OR_RENEW, name, text(e, 1), single);
      return AcquireResult.Refused.unexplained(name);
    }
    return new AcquireResult.Refused(name, heldBy(name, e));
  }

  /**
   * The one entry of a single call's reply: the scripts answer {@code head} elements for the
   * whole script, then one entry per name.
   */
  private static Object onlyEntry(@Nullable List<Object> reply, int head) {
    if (reply == null || reply.size() != head + 1) {
      throw unexpected(reply);
    }
    return reply.get(head);
  }

  /** Who holds {@code name}, from a refusal {@code {0, holder, token, expiresAtMs, pttlMs}}. */
  private static Optional<LeaseState.Held> heldBy(String name, List<Object> refusal) {
    long token = number(refusal, 2);
    long pttl = number(refusal, 4);
    if (token <= 0 || pttl <= 0) {
      return Optional.empty(); // not this library's shape: the caller's inspect will say why
    }
    try {
      return Optional.of(new LeaseState.Held(name, new HolderId(text(refusal, 1)), token,
          Instant.ofEpochMilli(number(refusal, 3)), Duration.ofMillis(pttl)));
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // a holder id this library would not write
    }
  }

  /**
   * Releases in one script: only if {@code holder} has a live lease key, which is deleted (the
   * counter never is), then {@code PUBLISH}es the name on {@code <prefix>:released}. A key of the
   * name that holds the wrong type throws {@link IllegalStateException}, with nothing changed.
   */
  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    List<Object> reply = run(Scripts.RELEASE, ScriptOutputType.MULTI, keys.releaseKeyArray(name),
        holder.value(), keys.releaseChannel(), name);
    return released(name, onlyEntry(reply, 0), true);
  }

  /**
   * The native batch: each name gets what {@link #release} gives it, by the same script, and each
   * released name is announced on {@code <prefix>:released} as a single release announces it.
   * Scripts, pipelining, the timeout, a key of the wrong type (that name answers false, nothing of
   * it changed, a warning logged) and an exception's unknown outcome as for
   * {@link #acquireOrRenewAll}.
   */
  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    return batch(Scripts.RELEASE, checked, n -> List.of(keys.releaseKeyArray(n)),
        group -> {
          String[] args = new String[group.size() + 2];
          args[0] = holder.value();
          args[1] = keys.releaseChannel();
          for (int i = 0; i < group.size(); i++) {
            args[i + 2] = group.get(i);
          }
          return args;
        }, 0,
        (name, entry, reply) -> released(name, entry, false));
  }

  /** Whether the release script's entry for {@code name} says it was released; as {@link #acquired}. */
  private static boolean released(String name, Object entry, boolean single) {
    if (LuaScript.isForeignKey(entry)) {
      foreignKey(Scripts.RELEASE, name, (String) entry, single);
      return false;
    }
    if (entry instanceof Long released) {
      return released == 1L;
    }
    throw unexpected(entry);
  }

  /** One name's result from its entry of a batch script's reply. */
  private interface Answer<R> {
    R apply(String name, Object entry, List<Object> reply);
  }

  /**
   * Runs {@code script} over {@code names} in the groups one script may take
   * ({@link KeyLayout#scriptGroups}), pipelined under one timeout: each group's KEYS are its names'
   * {@code keysOf} in order, its ARGV {@code argsOf(group)}; the script answers {@code head}
   * elements that hold for all its names, then one entry per name, which {@code answer} turns
   * into that name's result (given the script's whole reply, for the head).
   *
   * @return the results in the order of {@code names}; unmodifiable
   */
  private <R> Map<String, R> batch(LuaScript script, List<String> names,
      Function<String, List<String>> keysOf, Function<List<String>, String[]> argsOf, int head,
      Answer<R> answer) {
    ensureOpen();
    if (names.isEmpty()) {
      return Map.of();
    }
    Connector.Commands c = connected();
    List<List<String>> groups = keys.scriptGroups(names, c.cluster());
    List<Object> replies = script.runAll(c.scripting(), ScriptOutputType.MULTI, groups.size(),
        g -> {
          List<String> k = new ArrayList<>(groups.get(g).size() * 3);
          groups.get(g).forEach(n -> k.addAll(keysOf.apply(n)));
          return k.toArray(String[]::new);
        },
        g -> argsOf.apply(groups.get(g)), timeout, caller);
    Map<String, R> byName = new HashMap<>(names.size() * 2);
    for (int g = 0; g < groups.size(); g++) {
      List<String> group = groups.get(g);
      if (!(replies.get(g) instanceof List<?> reply) || reply.size() != head + group.size()) {
        throw unexpected(replies.get(g));
      }
      for (int i = 0; i < group.size(); i++) {
        byName.put(group.get(i), answer.apply(group.get(i), reply.get(head + i), cast(reply)));
      }
    }
    Map<String, R> results = new LinkedHashMap<>(names.size() * 2);
    names.forEach(n -> results.put(n, byName.get(n)));
    return Collections.unmodifiableMap(results);
  }

  /**
   * A key of {@code name} holds the wrong type: the single call throws, a batch logs it and goes
   * on (the script changed nothing of that name).
   */
  private static void foreignKey(LuaScript script, String name, String guardError,
      boolean single) {
    IllegalStateException e = script.foreignKey(guardError, null);
    if (single) {
      throw e;
    }
    log.warn("lease '{}' answered as not granted/released in a batch: {}", name, e.getMessage());
  }

  /**
   * A fencing bound for {@code name}: the highest token recorded — the counter (which always holds
   * the last token issued), or the live or last tenure's token if the counter was deleted by hand.
   * When nothing is recorded (never granted, or a server without persistence restarted and lost
   * every key) it is the server's time in ms minus one: every earlier token was clamped up to the
   * server's time when it was issued, and the next grant is clamped up to a later time, so it is
   * larger (same caveats as the clamp, see the class comment). Never empty.
   */
  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    Long hi = run(Scripts.HIGHEST_TOKEN, ScriptOutputType.INTEGER,
        new String[] {keys.fenceKey(name), keys.lastKey(name), keys.leaseKey(name)});
    return hi == null || hi <= 0 ? OptionalLong.empty() : OptionalLong.of(hi);
  }

  /**
   * Reads the lease in one script, from the server. HELD: the lease key lives ({@code remaining} is
   * its {@code PTTL}). EXPIRED: no lease key, and the last tenure's expiry (server ms) has passed
   * without a release. FREE otherwise (never granted, released, or deleted out of band), with the
   * same bound as {@link #token}.
   */
  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    String leaseKey = keys.leaseKey(name);
    List<Object> r = run(Scripts.INSPECT, ScriptOutputType.MULTI,
        new String[] {leaseKey, keys.fenceKey(name), keys.lastKey(name)});
    long status = number(r, 0);
    if (status == 1) {
      long pttl = number(r, 3);
      if (pttl < 0) {
        throw new IllegalStateException("lease key " + leaseKey + " has no expiry (PTTL " + pttl
            + "): it was changed outside this library; delete it so the lease can be taken again");
      }
      long now = number(r, 4);
      return new LeaseState.Held(name, new HolderId(text(r, 1)), number(r, 2),
          Instant.ofEpochMilli(now + pttl), Duration.ofMillis(pttl));
    }
    if (status == 2) {
      return new LeaseState.Expired(name, new HolderId(text(r, 1)), number(r, 2),
          Instant.ofEpochMilli(number(r, 3)));
    }
    return new LeaseState.Free(name, number(r, 1));
  }

  /**
   * The names whose lease key lives, that is the names held now (and, between its expiry and the
   * server's removal of the key, rarely one just expired): Redis keeps no record of a released
   * name here. Read with {@code SCAN ... MATCH} over this prefix's lease keys (the pattern's text
   * literal, {@link KeyLayout#leaseKeyPattern}), {@value #SCAN_COUNT} keys per call; on a cluster,
   * on every primary in turn. SCAN visits every key of the database whatever the prefix, so the
   * cost grows with the whole keyspace, not with the answer, and the whole listing, connecting
   * included, must finish within the command timeout or it throws
   * {@link LeaseStoreUnavailableException}: a database of 1,000,000 keys takes 1,000 calls of
   * about 1 ms of server time each, measured at 2-4 s in all on a loaded two-core machine, above
   * the default 2 s command timeout (give a store for listing a longer one). Keys of a nested prefix ({@code p:q} under {@code p})
   * or of other shapes are skipped. Keeps at most {@code limit} names in memory. Needs
   * {@code +scan} in the user's ACL ({@link RedisAcl}).
   */
  @Override
  public List<String> names(String prefix, int limit) {
    String p = LeaseListing.requireListing(prefix, limit);
    ensureOpen();
    long deadline = System.nanoTime() + timeout.toNanos();
    Connector.Commands c = connected();
    String pattern = keys.leaseKeyPattern(p);
    ScanArgs args = ScanArgs.Builder.matches(pattern).limit(SCAN_COUNT);
    TreeSet<String> smallest = new TreeSet<>(LeaseListing.CODE_POINT_ORDER);
    KeyScanCursor<String> cursor = null;
    int calls = 0;
    do {
      String what = "finish listing lease names (SCAN MATCH " + pattern + ", call " + (calls + 1)
          + "; SCAN visits every key of the database whatever the prefix)";
      cursor = await(cursor == null ? c.keys().scan(args).toCompletableFuture()
          : c.keys().scan(cursor, args).toCompletableFuture(), what, v -> {},
          Math.max(0, deadline - System.nanoTime()));
      calls++;
      for (String key : cursor.getKeys()) {
        String name = keys.nameOfLeaseKey(key);
        if (name != null && name.startsWith(p) && smallest.add(name) && smallest.size() > limit) {
          smallest.pollLast();
        }
      }
    } while (!cursor.isFinished());
    return List.copyOf(smallest);
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  /**
   * Runs {@code listener} (on a store thread, one at a time) when a release of {@code name} is
   * announced on {@code <prefix>:released}. The first call opens the subscriber connection; once
   * this method has returned with that connection up, later releases are delivered — but hints are
   * lost while it is disconnected, and expiry or an out-of-band delete sends none. By the time the
   * listener runs, someone else may already hold the lease: treat it as "go and ask", never as
   * "it is yours". If Redis refuses the subscriber (credentials, or an ACL without the channel,
   * see {@link RedisAcl}), this logs one warning that says why and keeps retrying; it does not
   * throw.
   */
  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    ensureOpen();
    Subscription subscription = listeners.add(name, listener);
    ensureSubscribed();
    return subscription;
  }

  /**
   * Closes the connections this store opened and, if it was built from a URI, shuts its Lettuce
   * client down (no threads remain). Leases are not released: they expire. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (pubSubLock) {
      if (events != null) {
        events.shutdownNow();
      }
      closeAndWait(pubSub);
      pubSub = null;
    }
    synchronized (connectLock) {
      Connector.Commands c = commands;
      commands = null;
      if (c != null) {
        closeAndWait(c.connection());
      }
    }
    try {
      connector.shutdown(timeout.plusSeconds(1));
    } catch (RuntimeException e) {
      log.warn("shutting down the Redis client of a lease store failed", e);
    }
  }

  /**
   * The keys that hold {@code name}'s lease, for operators and tests: lease hash, fence counter,
   * last-tenure hash, in that order. They share the hash tag {@code {<prefix>:<encoded name>}},
   * where the name's UTF-8 bytes outside {@code A-Z a-z 0-9 - . _ ~ /} are percent-encoded.
   */
  public List<String> keysOf(String name) {
    return keys.leaseKeys(name);
  }

  /** The pub/sub channel that announces releases; each message is a lease name. */
  public String releaseChannel() {
    return keys.releaseChannel();
  }

  /** The bound on every call. */
  public Duration commandTimeout() {
    return timeout;
  }

  @Override
  public String toString() {
    return "RedisLeaseStore[" + connector.describe() + ", keyPrefix=" + keys.prefix()
        + (closed.get() ? ", closed" : "") + "]";
  }

  // --- internals -------------------------------------------------------------------------------

  /** The key layout of this store's prefix (the run ledger lays out its keys beside it). */
  KeyLayout layout() {
    return keys;
  }

  /**
   * Runs {@code script} on this store's connection, bounded by the command timeout; also what a
   * {@link RedisRunLedger} built on this store runs its scripts with.
   */
  <T> T run(LuaScript script, ScriptOutputType type, String[] keyArgs, String... args) {
    ensureOpen();
    Connector.Commands c = connected();
    return script.run(c.scripting(), type, keyArgs, args, timeout, caller);
  }

  private Connector.Commands connected() {
    Connector.Commands c = commands;
    if (c != null) {
      return c;
    }
    synchronized (connectLock) {
      ensureOpen();
      if (commands == null) {
        commands = await(connector.connect(), "connect to " + connector.describe(),
            conn -> closeQuietly(conn.connection()));
      }
      return commands;
    }
  }

  private void ensureSubscribed() {
    synchronized (pubSubLock) {
      if (pubSub != null || closed.get()) {
        return;
      }
      if (events == null) {
        events = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "leases-redis-events");
          t.setDaemon(true);
          return t;
        });
      }
      StatefulRedisPubSubConnection<String, String> c = null;
      try {
        c = await(connector.connectPubSub(), "open the subscriber connection",
            RedisLeaseStore::closeQuietly);
        c.addListener(new Dispatcher());
        await(c.async().subscribe(keys.releaseChannel()).toCompletableFuture(),
            "subscribe to " + keys.releaseChannel(), v -> {});
        pubSub = c;
      } catch (RuntimeException e) {
        closeQuietly(c);
        if (e instanceof RedisAccessDeniedException && !deniedLogged) {
          deniedLogged = true; // once: the retries would repeat it every second
          log.warn("release hints unavailable, retrying every {}: {}", PUBSUB_RETRY,
              e.getMessage());
        } else {
          log.debug("release hints unavailable for now ({}); retrying in {}", e.getMessage(),
              PUBSUB_RETRY);
        }
        if (!pubSubRetryScheduled && !events.isShutdown()) {
          pubSubRetryScheduled = true;
          events.schedule(() -> {
            synchronized (pubSubLock) {
              pubSubRetryScheduled = false;
            }
            ensureSubscribed();
          }, PUBSUB_RETRY.toMillis(), TimeUnit.MILLISECONDS);
        }
      }
    }
  }

  private final class Dispatcher extends RedisPubSubAdapter<String, String> {
    @Override
    public void message(String channel, String message) {
      if (!keys.releaseChannel().equals(channel) || message == null) {
        return;
      }
      ScheduledExecutorService ex = events;
      if (ex != null) {
        listeners.fire(message, ex);
      }
    }
  }

  private <T> T await(CompletableFuture<? extends T> future, String what,
      java.util.function.Consumer<? super T> discardLate) {
    return await(future, what, discardLate, timeout.toNanos());
  }

  /** Waits up to {@code waitNanos} (the rest of a call's bound) for {@code future}. */
  private <T> T await(CompletableFuture<? extends T> future, String what,
      java.util.function.Consumer<? super T> discardLate, long waitNanos) {
    try {
      T value = future.get(waitNanos, TimeUnit.NANOSECONDS);
      if (closed.get()) {
        discardLate.accept(value);
        throw new LeaseStoreClosedException("this RedisLeaseStore is closed");
      }
      return value;
    } catch (TimeoutException e) {
      future.thenAccept(discardLate);
      future.cancel(false);
      throw new LeaseStoreUnavailableException("could not " + what + " within " + timeout
          + "; check that Redis runs and is reachable, or raise the command timeout", e);
    } catch (InterruptedException e) {
      future.thenAccept(discardLate);
      Thread.currentThread().interrupt();
      throw new LeaseStoreUnavailableException("interrupted while trying to " + what, e);
    } catch (ExecutionException e) {
      RuntimeException closedError = closedOrNull();
      if (closedError != null) {
        throw closedError;
      }
      Throwable cause = e.getCause() == null ? e : e.getCause();
      RuntimeException denied = Refusals.denied(cause, caller.user(), caller.grant(), null);
      if (denied != null) {
        throw denied;
      }
      SSLException tls = tlsFailure(cause);
      if (tls != null) {
        throw new LeaseStoreUnavailableException("the TLS handshake with " + connector.describe()
            + " failed (" + tls.getMessage() + "), so could not " + what + ". Check that the"
            + " trust certificate is the authority that signed the server's certificate, that"
            + " the server's certificate names the URI's host (subject alternative name), and, if"
            + " the server demands client certificates (tls-auth-clients), that a client"
            + " certificate and key signed by an authority it trusts are given", cause);
      }
      throw new LeaseStoreUnavailableException("could not " + what + ": " + cause
          + "; check the URI, credentials and that Redis runs", cause);
    }
  }

  private static @Nullable SSLException tlsFailure(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SSLException e) {
        return e;
      }
    }
    return null;
  }

  private @Nullable RuntimeException closedOrNull() {
    return closed.get() ? new LeaseStoreClosedException("this RedisLeaseStore is closed") : null;
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException("this RedisLeaseStore is closed; build a new one");
    }
  }

  private static long number(List<Object> reply, int index) {
    if (reply == null || reply.size() <= index || !(reply.get(index) instanceof Long n)) {
      throw unexpected(reply);
    }
    return n;
  }

  private static LeaseStoreUnavailableException unexpected(Object reply) {
    return new LeaseStoreUnavailableException("unexpected reply from Redis: " + reply
        + " (are the lease keys being written by something other than this library?)", null);
  }

  @SuppressWarnings("unchecked")
  private static List<Object> cast(List<?> list) {
    return (List<Object>) list;
  }

  private static String text(List<Object> reply, int index) {
    Object v = reply.size() > index ? reply.get(index) : null;
    if (v instanceof String s) {
      return s;
    }
    if (v instanceof byte[] b) {
      return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }
    throw new LeaseStoreUnavailableException("unexpected reply from Redis: " + reply, null);
  }

  private void closeAndWait(io.lettuce.core.api.@Nullable StatefulConnection<?, ?> c) {
    if (c == null) {
      return;
    }
    try {
      c.closeAsync().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      log.debug("closing a Redis connection failed", e);
    }
  }

  private static void closeQuietly(io.lettuce.core.api.@Nullable StatefulConnection<?, ?> c) {
    if (c == null) {
      return;
    }
    try {
      c.closeAsync();
    } catch (RuntimeException e) {
      log.debug("closing a Redis connection failed", e);
    }
  }
}
