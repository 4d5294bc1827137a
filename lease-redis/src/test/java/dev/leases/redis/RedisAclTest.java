package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Redis ACLs against a real server ({@link SecureRedis}: TLS, ACL users): the rules of
 * {@link RedisAcl} are enough and no more — a holder confined to its prefix, an observer that reads
 * but cannot write — and every refusal is a {@link RedisAccessDeniedException} that names the
 * user, the command and key, and what to grant; wrong or missing credentials and untrusted
 * certificates fail fast and say what to check.
 */
class RedisAclTest {

  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration LONG_TIMEOUT = Duration.ofSeconds(20);

  private static SecureRedis redis;
  private static String prefixA;
  private static String prefixB;
  private static String holder;
  private static String observer;
  private static String password;

  @BeforeAll
  static void users() throws Exception {
    redis = SecureRedis.shared();
    prefixA = SecureRedis.random("acl-a-");
    prefixB = SecureRedis.random("acl-b-");
    holder = SecureRedis.random("holder-");
    observer = SecureRedis.random("observer-");
    password = SecureRedis.random("pw-");
    redis.addUser(holder, password, prefixA, RedisAcl.Access.HOLDER);
    redis.addUser(observer, password, prefixA, RedisAcl.Access.OBSERVER);
    // idempotent: applying again changes nothing and keeps the password
    RedisAcl.apply(redis.admin(), observer, prefixA, RedisAcl.Access.OBSERVER,
        Duration.ofSeconds(10));
  }

  private static RedisLeaseStore store(String user, String prefix) {
    return redis.builder(redis.uri()).user(user, password).keyPrefix(prefix)
        .commandTimeout(Duration.ofSeconds(10)).build();
  }

  @Test
  void theRulesAreTheScriptsCommandsOnThePrefixAndTheReleaseChannel() {
    assertThat(RedisAcl.rules("myapp:leases", RedisAcl.Access.OBSERVER)).containsExactly(
        "resetkeys", "resetchannels", "-@all", "~{myapp:leases:*", "&myapp:leases:released",
        "+evalsha", "+eval", "+type", "+get", "+hget", "+hmget", "+pttl", "+time", "+exists",
        "+hexists", "+hkeys", "+scan", "+subscribe", "+unsubscribe");
    assertThat(RedisAcl.rules("myapp:leases", RedisAcl.Access.HOLDER))
        .containsAll(RedisAcl.rules("myapp:leases", RedisAcl.Access.OBSERVER))
        .contains("+incr", "+set", "+hset", "+pexpireat", "+del", "+hdel", "+publish")
        .noneMatch(r -> r.startsWith(">") || r.equals("on") || r.equals("+@all"));
    assertThat(RedisAcl.setUserCommand("myapp", "myapp:leases", RedisAcl.Access.HOLDER))
        .startsWith("ACL SETUSER myapp resetkeys resetchannels -@all ~{myapp:leases:* ");
    assertThat(RedisAcl.fenceRules("{orders}:*")).containsExactly("~{orders}:*",
        "~leases:fence:{orders}:*", "~leases:fence-key:{{orders}:*}", "+evalsha", "+eval",
        "+type", "+get", "+set", "+hset");
    assertThatThrownBy(() -> RedisAcl.setUser(redis.admin(), holder, List.of(">secret"),
        Duration.ofSeconds(5))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not passwords");
    assertThatThrownBy(() -> RedisAcl.rules("bad{prefix", RedisAcl.Access.HOLDER))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void anObserverReadsInspectsAndWatchesButEveryWriteIsDeniedByName() throws Exception {
    String name = SecureRedis.random("watched-");
    String free = SecureRedis.random("free-");
    HolderId h = HolderId.generate();
    try (RedisLeaseStore holderStore = store(holder, prefixA);
        RedisLeaseStore observerStore = store(observer, prefixA);
        RedisRunLedger observerLedger = RedisRunLedger.on(observerStore)) {
      LeaseGrant g = holderStore.acquireOrRenew(name, h, TTL).orElseThrow();
      assertThat(observerStore.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
          held -> assertThat(held.lastToken()).isEqualTo(g.token()));
      assertThat(observerStore.token(name)).hasValue(g.token());
      assertThat(observerStore.names(name, 10)).containsExactly(name);
      assertThat(observerLedger.completion("job", "run")).isEmpty();
      assertThat(observerLedger.history("job", 10)).isEmpty();

      // a write refused by ACL is never "held by another": held, free, batch, release
      for (Runnable write : List.<Runnable>of(
          () -> observerStore.acquireOrRenew(name, HolderId.generate(), TTL),
          () -> observerStore.acquireOrRenew(free, HolderId.generate(), TTL),
          () -> observerStore.acquireOrRenewAll(List.of(free, name), HolderId.generate(), TTL),
          () -> observerStore.release(name, h),
          () -> observerStore.release(free, h),
          () -> observerStore.releaseAll(List.of(free, name), h))) {
        assertThatThrownBy(write::run).isInstanceOf(RedisAccessDeniedException.class)
            .hasMessageContaining("Redis user '" + observer + "' may not run ")
            .hasMessageContaining("{" + prefixA + ":")
            .hasMessageContaining("before anything was changed")
            .hasMessageContaining("ACL SETUSER " + observer + " resetkeys");
      }
      assertThatThrownBy(() -> observerLedger.begin("job", "run", g.token(), h))
          .isInstanceOf(RedisAccessDeniedException.class).hasMessageContaining(observer);
      assertThat(holderStore.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
          held -> assertThat(held.holder()).isEqualTo(h));
      assertThat(observerStore.inspect(free)).isInstanceOf(LeaseState.Free.class);

      AtomicBoolean released = new AtomicBoolean();
      try (LeaseStore.Subscription s = observerStore.onRelease(name, () -> released.set(true))) {
        assertThat(holderStore.release(name, h)).isTrue();
        await().atMost(Duration.ofSeconds(30)).untilTrue(released);
      }
      assertThat(observerStore.inspect(name)).isInstanceOf(LeaseState.Free.class);

      // inspect clears the evidence of a tenure whose lease key was deleted; an observer may not
      // write, so it reads the same answer without clearing it
      holderStore.acquireOrRenew(name, h, TTL).orElseThrow();
      redis.admin().sync().del(holderStore.keysOf(name).get(0));
      assertThat(observerStore.inspect(name)).isInstanceOf(LeaseState.Free.class);
      assertThat(holderStore.inspect(name)).isInstanceOf(LeaseState.Free.class);
    }
  }

  /**
   * Nothing a holder does is refused by the server — not a script command, not a command Lettuce
   * sends on connecting (HELLO, CLIENT SETINFO), not the subscription: {@code ACL LOG} has no
   * entry for the user.
   */
  @Test
  void theHolderRulesAreEnoughForEveryCallTheServerLogsNoRefusal() throws Exception {
    String user = SecureRedis.random("enough-");
    redis.addUser(user, password, prefixA, RedisAcl.Access.HOLDER);
    String name = SecureRedis.random("enough-");
    HolderId h = HolderId.generate();
    AtomicBoolean released = new AtomicBoolean();
    try (RedisLeaseStore store = store(user, prefixA);
        RedisRunLedger ledger = RedisRunLedger.on(store);
        LeaseStore.Subscription s = store.onRelease(name, () -> released.set(true))) {
      long token = store.acquireOrRenew(name, h, TTL).orElseThrow().token();
      assertThat(store.acquireOrRenewAll(List.of(name, name + "-2"), h, TTL)).hasSize(2);
      assertThat(store.inspect(name)).isInstanceOf(LeaseState.Held.class);
      assertThat(store.token(name)).hasValue(token);
      assertThat(store.names(name, 10)).containsExactly(name, name + "-2");
      var attempt = ledger.begin(name, "r", token, h);
      ledger.fail(attempt, "test");
      ledger.complete(ledger.begin(name, "r", token, h), none -> {});
      assertThat(ledger.history(name, 5)).hasSize(2);
      assertThat(store.releaseAll(List.of(name, name + "-2"), h)).containsValues(true, true);
      await().atMost(Duration.ofSeconds(30)).untilTrue(released);
    }
    // the check can fail: a refusal of the same user shows up in the log
    String refused = SecureRedis.random("refused-");
    redis.addUser(refused, password, prefixA, RedisAcl.Access.HOLDER);
    RedisClient client = redis.client(refused, password);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      assertThatThrownBy(() -> c.sync().get("unrelated")).hasMessageContaining("NOPERM");
    } finally {
      client.shutdown();
    }
    var log = redis.admin().sync().aclLog();
    assertThat(log).anySatisfy(entry -> assertThat(entry).containsEntry("username", refused));
    assertThat(log).noneSatisfy(entry -> assertThat(entry).containsEntry("username", user));
  }

  /**
   * The acquire script asks whether a name's three keys may be written with one {@code DEL} check,
   * and only when that is refused asks key by key: a holder whose rules lack {@code DEL} still
   * acquires, renews and batches (its release, which runs {@code DEL}, is refused by name), and a
   * holder whose write commands reach only two of a name's three keys (an ACL selector) is refused
   * naming the third, with nothing written.
   */
  @Test
  void theOneCheckPerNameFallsBackToEachKeyAndCommand() throws Exception {
    String noDel = SecureRedis.random("nodel-");
    String readOnlyLast = SecureRedis.random("rolast-");
    List<String> holderRules = RedisAcl.rules(prefixA, RedisAcl.Access.HOLDER);
    List<String> withoutDel = new java.util.ArrayList<>(holderRules);
    withoutDel.add("-del");
    RedisAcl.setUser(redis.admin(), noDel, withoutDel, LONG_TIMEOUT);
    redis.setPassword(noDel, password);
    String name = SecureRedis.random("keys-");
    List<String> keys;
    try (RedisLeaseStore any = store(holder, prefixA)) {
      keys = any.keysOf(name);
    }
    // Redis checks a script's declared keys for reads and writes before it runs, so only a
    // selector can make one key of a name unwritable by a command the script runs: here the
    // writes are granted by a selector that names the lease and fence keys alone
    String selector = "(+incr +set +hset +pexpireat +del ~" + keys.get(0) + " ~" + keys.get(1)
        + ")";
    var args = new io.lettuce.core.protocol.CommandArgs<>(io.lettuce.core.codec.StringCodec.UTF8)
        .add("SETUSER").add(readOnlyLast);
    RedisAcl.rules(prefixA, RedisAcl.Access.OBSERVER).forEach(args::add);
    args.add(selector);
    assertThat(redis.admin().sync().dispatch(io.lettuce.core.protocol.CommandType.ACL,
        new io.lettuce.core.output.StatusOutput<>(io.lettuce.core.codec.StringCodec.UTF8), args))
        .isEqualTo("OK");
    redis.setPassword(readOnlyLast, password);
    HolderId h = HolderId.generate();
    try (RedisLeaseStore store = store(noDel, prefixA);
        RedisLeaseStore confined = store(readOnlyLast, prefixA)) {
      String other = SecureRedis.random("nodel-lease-");
      LeaseGrant g = store.acquireOrRenew(other, h, TTL).orElseThrow();
      assertThat(store.acquireOrRenew(other, h, TTL).orElseThrow().token()).isEqualTo(g.token());
      assertThat(store.acquireOrRenewAll(List.of(other, SecureRedis.random("nodel-b-")), h, TTL)
          .values()).allMatch(r -> r.grant().isPresent());
      assertThatThrownBy(() -> store.release(other, h))
          .isInstanceOf(RedisAccessDeniedException.class).hasMessageContaining("DEL");

      assertThatThrownBy(() -> confined.acquireOrRenew(name, h, TTL))
          .isInstanceOf(RedisAccessDeniedException.class)
          .hasMessageContaining("HSET").hasMessageContaining(keys.get(2))
          .hasMessageContaining("before anything was changed");
      assertThat(redis.admin().sync().exists(keys.get(0), keys.get(1), keys.get(2))).isZero();
    }
  }

  @Test
  void aHolderConfinedToOnePrefixCannotTouchAnotherPrefixsLeasesOrOtherKeys() throws Exception {
    String name = SecureRedis.random("other-");
    try (RedisLeaseStore wrongPrefix = store(holder, prefixB)) {
      for (Runnable call : List.<Runnable>of(
          () -> wrongPrefix.acquireOrRenew(name, HolderId.generate(), TTL),
          () -> wrongPrefix.inspect(name), () -> wrongPrefix.token(name),
          () -> wrongPrefix.release(name, HolderId.generate()))) {
        assertThatThrownBy(call::run).isInstanceOf(RedisAccessDeniedException.class)
            .hasMessageContaining("Redis user '" + holder + "'")
            .hasMessageContaining("RedisAcl.rules(\"" + prefixB + "\", HOLDER)");
      }
      try (RedisRunLedger ledger = RedisRunLedger.on(wrongPrefix)) {
        assertThatThrownBy(() -> ledger.completion("job", "run"))
            .isInstanceOf(RedisAccessDeniedException.class).hasMessageContaining(holder);
      }
    }
    RedisClient client = redis.client(holder, password);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      assertThatThrownBy(() -> c.sync().get("unrelated"))
          .isInstanceOf(RedisCommandExecutionException.class).hasMessageContaining("NOPERM");
      assertThatThrownBy(() -> c.sync().flushall())
          .isInstanceOf(RedisCommandExecutionException.class).hasMessageContaining("NOPERM");
      assertThatThrownBy(() -> c.sync().eval("return redis.call('GET', 'unrelated')",
          io.lettuce.core.ScriptOutputType.VALUE)).hasMessageContaining("can't access");
    } finally {
      client.shutdown();
    }
  }

  /** Without {@code +scan} (an administrator's {@code -scan}), listing alone is refused. */
  @Test
  void aListingRefusedForWantOfScanSaysWhoAndWhatToGrant() {
    String user = SecureRedis.random("noscan-");
    redis.addUser(user, password, prefixA, RedisAcl.Access.OBSERVER);
    RedisAcl.setUser(redis.admin(), user, List.of("-scan"), Duration.ofSeconds(10));
    try (RedisLeaseStore s = store(user, prefixA)) {
      assertThat(s.inspect(SecureRedis.random("x-"))).isInstanceOf(LeaseState.Free.class);
      assertThatThrownBy(() -> s.names("", 10)).isInstanceOf(RedisAccessDeniedException.class)
          .hasMessageContaining("Redis user '" + user + "' was refused by its ACL")
          .hasMessageContaining("scan")
          .hasMessageContaining("RedisAcl.rules(\"" + prefixA + "\", HOLDER)");
    }
  }

  @Test
  void theHoldersRulesCoverTheRunLedgerAndAFenceWriterNeedsFenceRulesToo() throws Exception {
    String job = SecureRedis.random("job-");
    String resource = "{" + prefixA + "-data}:" + job;
    HolderId h = HolderId.generate();
    String fenceUser = SecureRedis.random("fencer-");
    redis.addUser(fenceUser, password, prefixA, RedisAcl.Access.HOLDER);
    RedisClient client = redis.client(fenceUser, password);
    try (RedisLeaseStore store = store(holder, prefixA);
        RedisRunLedger ledger = RedisRunLedger.on(store);
        StatefulRedisConnection<String, String> c = client.connect()) {
      long token = store.acquireOrRenew(job, h, TTL).orElseThrow().token();
      var attempt = ledger.begin(job, "r1", token, h);
      ledger.complete(attempt, none -> {});
      assertThat(ledger.completion(job, "r1")).isPresent();

      RedisFence fence = RedisFence.of(c, Duration.ofSeconds(10));
      assertThatThrownBy(() -> fence.set(resource, "v", token))
          .isInstanceOf(RedisAccessDeniedException.class)
          .hasMessageContaining("RedisAcl.fenceRules").hasMessageContaining(resource);
      assertThatThrownBy(() -> fence.hset(resource, Map.of("f", "v"), token))
          .isInstanceOf(RedisAccessDeniedException.class);
      RedisAcl.setUser(redis.admin(), fenceUser, RedisAcl.fenceRules("{" + prefixA + "-data}:*"),
          Duration.ofSeconds(10));
      fence.set(resource, "v", token);
      assertThat(fence.highestToken(resource)).hasValue(token);
      assertThat(redis.admin().sync().get(resource)).isEqualTo("v");
    } finally {
      client.shutdown();
    }
  }

  @Test
  void wrongOrMissingCredentialsAreDeniedAtOnceNotUnavailable() {
    String nobody = SecureRedis.random("nobody-");
    for (LeaseStore store : List.of(
        redis.builder(redis.uri()).user(holder, password + "x").commandTimeout(LONG_TIMEOUT)
            .keyPrefix(prefixA).build(),
        redis.builder(redis.uri()).user(nobody, password).commandTimeout(LONG_TIMEOUT)
            .keyPrefix(prefixA).build())) {
      failsFast(store, RedisAccessDeniedException.class, "Redis rejected the credentials",
          "WRONGPASS", "passwordFile");
    }
    failsFast(redis.builder(redis.uri()).commandTimeout(LONG_TIMEOUT).build(),
        RedisAccessDeniedException.class, "requires authentication", "NOAUTH", "user");
  }

  @Test
  void anUntrustedServerCertificateOrNoClientCertificateFailsFastAndSaysWhatToCheck() {
    failsFast(RedisLeaseStore.builder(redis.uri()).user(holder, password)
            .tls(redis.certs.wrongCa(), redis.certs.clientCert(), redis.certs.clientKey())
            .commandTimeout(LONG_TIMEOUT).build(), LeaseStoreUnavailableException.class,
        "TLS handshake with", "trust certificate", "subject alternative name");
    failsFast(RedisLeaseStore.builder(redis.uri()).user(holder, password)
            .tls(redis.certs.ca(), null, null).commandTimeout(LONG_TIMEOUT).build(),
        LeaseStoreUnavailableException.class, "client certificate");
    failsFast(RedisLeaseStore.builder(redis.uri()).user(holder, password)
            .tls(redis.certs.ca(), redis.certs.wrongClientCert(), redis.certs.wrongClientKey())
            .commandTimeout(LONG_TIMEOUT).build(),
        LeaseStoreUnavailableException.class, "client certificate");
  }

  @Test
  void credentialsAndTlsAreCheckedUpFront() throws Exception {
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:6379")
        .tls(redis.certs.ca(), null, null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rediss://");
    assertThatThrownBy(() -> RedisLeaseStore.builder(redis.uri())
        .tls(redis.certs.dir().resolve("missing.pem"), null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("missing.pem");
    assertThatThrownBy(() -> RedisLeaseStore.builder(redis.uri())
        .tls(redis.certs.ca(), redis.certs.clientCert(), null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("both");
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://u:p@127.0.0.1:6379")
        .user("u", "q")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("one way");
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:6379")
        .user("u", redis.certs.dir().resolve("no-such-password")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no-such-password");
    try (RedisClient own = RedisClient.create()) {
      assertThatThrownBy(() -> RedisLeaseStore.builder(own,
          io.lettuce.core.RedisURI.create(redis.uri())).user("u", "p"))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("your RedisURI");
    }
  }

  private static void failsFast(LeaseStore store, Class<? extends Throwable> type,
      String... fragments) {
    try (store) {
      long start = System.nanoTime();
      var thrown = assertThatThrownBy(() -> store.acquireOrRenew(SecureRedis.random("c-"),
          HolderId.generate(), TTL)).isInstanceOf(type);
      for (String f : fragments) {
        thrown.hasMessageContaining(f);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("fails fast, not after the command timeout of %s", LONG_TIMEOUT)
          .isLessThan(LONG_TIMEOUT.dividedBy(2));
    }
  }
}
