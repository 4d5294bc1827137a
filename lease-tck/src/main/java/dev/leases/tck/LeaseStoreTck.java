package dev.leases.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import dev.leases.tck.process.LeaderProcess;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.servers.TcpProxy;
import dev.leases.time.LeaseClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The compatibility kit: every {@link LeaseStore} — ours or yours — extends this class and passes
 * every scenario. Supply a store with {@link #newStore()}, tell the kit how another JVM opens one
 * ({@link #storeRecipe()}) and how to delete a lease behind the store's back
 * ({@link #deleteOutOfBand(String)}); adjust timing with {@link #expirySlack()} and
 * {@link #testTtl()}. Each scenario uses a fresh random lease name, waits on conditions rather than
 * fixed sleeps, and can fail.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class LeaseStoreTck {

  private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();
  private String testName = "tck";
  private TtlRange range;
  private Duration ttl;

  /** A new client of the backend under test; every client sees the same leases. The kit closes it. */
  protected abstract LeaseStore newStore();

  /** How a separate JVM opens a client of the same backend (for the SIGSTOP and SIGKILL scenarios). */
  protected abstract StoreRecipe storeRecipe();

  /** Deletes the stored lease {@code name} behind the store's back, as an operator might by hand. */
  protected abstract void deleteOutOfBand(String name) throws Exception;

  /**
   * How much later than its promised expiry the store may still refuse a contender (Consul may wait
   * up to 2 x TTL). Default zero.
   */
  protected Duration expirySlack() {
    return Duration.ZERO;
  }

  /**
   * Whether the store's {@link LeaseStore#onRelease} delivers hints (default true). A store that
   * delivers hints must let a follower take over within one second of a clean release, in this JVM
   * and from another; one that delivers none (the SPI's default) must still hand over within one TTL
   * plus one renew interval, because followers poll until the expiry they last read.
   */
  protected boolean deliversReleaseHints() {
    return true;
  }

  /**
   * The loopback TCP port of the store's server, so that the kit can put a
   * {@link TcpProxy} in front of it and stall or cut one client's connection. Override it together
   * with {@link #newStoreVia(int, Duration)}; the default fails the scenario with these instructions.
   */
  protected int storePort() {
    throw new AssertionError("override storePort() and newStoreVia(int, Duration) in your kit"
        + " subclass: the kit stalls a client's connection through a TCP proxy to prove that every"
        + " call stays bounded (for an in-process store, serve it with"
        + " dev.leases.tck.remote.LeaseStoreServer and connect with RemoteLeaseStore)");
  }

  /**
   * A new client that reaches the store's server at {@code 127.0.0.1:port} (a proxy in front of
   * {@link #storePort()}) and bounds each call by {@code callTimeout}. The kit closes it.
   */
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    throw new AssertionError("override newStoreVia(int, Duration) together with storePort()");
  }

  /**
   * Whether {@link #deleteOutOfBand} makes the store deliver a release hint (etcd watches and Consul
   * blocking queries see a delete; a PostgreSQL {@code DELETE} sends no NOTIFY, a Redis {@code DEL}
   * publishes nothing). Default false.
   */
  protected boolean deliversHintsOnOutOfBandDelete() {
    return false;
  }

  /**
   * A new client whose process clock is {@code clock}, for a store whose clients take one. The
   * default, {@link #newStore()}, is right for every store that never reads its caller's clock —
   * which every correct store is; override it if your client can be given a clock, so that the kit
   * can prove expiry is not judged by it. The kit closes it.
   */
  protected LeaseStore newStoreWithClientClock(LeaseClock clock) {
    return newStore();
  }

  /**
   * Restarts the store's server the way it restarts in production (a Redis without persistence
   * comes back empty; PostgreSQL, etcd and Consul servers keep their data directories), and returns
   * once it accepts connections; clients made before may reconnect or fail. The default fails the
   * scenario with these instructions.
   */
  protected void restartStore() throws Exception {
    throw new AssertionError("override restartStore() in your kit subclass: the kit proves that"
        + " tokens never go backwards across a restart of the store's server");
  }

  /**
   * Ends, behind the store's back, the server-side lease or session that keeps {@code name} alive
   * (etcd: revoke the etcd lease attached to its key; Consul: destroy the session that locks it), as
   * an operator or a server-side expiry would, and with it every other name tied to the same lease
   * or session. Returns false, the default, for a store that ties no names together: the kit then
   * proves that names are independent instead.
   */
  protected boolean endSharedFate(String name) throws Exception {
    return false;
  }

  /**
   * The TTL the scenarios use: default 1.5 s rounded up to the store's granularity, raised to its
   * minimum.
   */
  protected Duration testTtl() {
    TtlRange r = probeRange();
    Duration ttl = r.roundUp(Duration.ofMillis(1500));
    return ttl.compareTo(r.min()) < 0 ? r.roundUp(r.min()) : ttl;
  }

  private TtlRange probeRange() {
    if (range == null) {
      range = store().ttlRange();
    }
    return range;
  }

  @BeforeEach
  void rememberName(TestInfo info) {
    testName = info.getTestMethod().map(m -> m.getName()).orElse("tck");
  }

  @AfterEach
  void closeAll() {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      try {
        closeables.get(i).close();
      } catch (Exception e) {
        // closing anyway; the test's own assertions decide
      }
    }
    closeables.clear();
  }

  /** A client the kit closes after the test. */
  protected final LeaseStore store() {
    LeaseStore s = newStore();
    closeables.add(s);
    return s;
  }

  /** A fresh lease name for this test. */
  protected final String leaseName() {
    byte[] b = new byte[6];
    ThreadLocalRandom.current().nextBytes(b);
    String base = testName.length() > 40 ? testName.substring(0, 40) : testName;
    return "tck-" + base + "-" + HexFormat.of().formatHex(b);
  }

  private Duration ttl() {
    if (ttl == null) {
      ttl = testTtl();
    }
    return ttl;
  }

  /**
   * 60 s (or the store's maximum): for scenarios about something other than expiry, so that a slow
   * machine cannot make a lease expire under them.
   */
  private Duration longTtl() {
    TtlRange r = probeRange();
    Duration sixty = r.roundUp(Duration.ofSeconds(60));
    return sixty.compareTo(r.max()) > 0 ? r.max() : sixty;
  }

  private Duration expiryWait() {
    return ttl().plus(expirySlack()).plusSeconds(10);
  }

  private LeaderLoop loop(LeaseStore s, String name, LeaderListener... listeners) {
    LeaderLoop.Builder b = LeaderLoop.builder(s, name).ttl(ttl());
    for (LeaderListener l : listeners) {
      b.listener(l);
    }
    LeaderLoop loop = b.build();
    closeables.add(loop);
    return loop;
  }

  private static LeaseGrant granted(Optional<LeaseGrant> g, String what) {
    return g.orElseThrow(() -> new AssertionError(what + ": expected a grant, got none"));
  }

  private void awaitNotHeld(LeaseStore s, String name) {
    await("lease " + name + " expires").atMost(expiryWait()).pollInterval(Duration.ofMillis(20))
        .until(() -> s.inspect(name).status() != LeaseState.Status.HELD);
  }

  // ---------------------------------------------------------------- grants and tokens

  @Test
  void freshAcquireGivesPositiveTokenAndFutureExpiry() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g = granted(s.acquireOrRenew(name, a, ttl()), "fresh acquire");
    assertThat(g.token()).isPositive();
    assertThat(g.name()).isEqualTo(name);
    assertThat(g.holder()).isEqualTo(a);
    assertThat(g.ttl()).isGreaterThanOrEqualTo(ttl());
    LeaseState st = s.inspect(name);
    assertThat(st).isInstanceOf(LeaseState.Held.class);
    LeaseState.Held held = (LeaseState.Held) st;
    assertThat(held.holder()).isEqualTo(a);
    assertThat(held.lastToken()).isEqualTo(g.token());
    assertThat(held.remaining()).isPositive().isLessThanOrEqualTo(g.ttl().plusMillis(50));
    assertThat(held.expiresAt()).isCloseTo(g.expiresAt(), within(s));
    assertThat(s.token(name)).hasValue(g.token());
  }

  private static org.assertj.core.data.TemporalUnitOffset within(LeaseStore s) {
    long ms = Math.max(50, s.ttlRange().granularity().toMillis());
    return org.assertj.core.api.Assertions.within(ms, java.time.temporal.ChronoUnit.MILLIS);
  }

  @Test
  void renewalBySameHolderKeepsTokenAndExtendsExpiry() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    Duration before = ((LeaseState.Held) s.inspect(name)).remaining();
    await("time passes on the store").atMost(expiryWait()).pollInterval(Duration.ofMillis(20))
        .until(() -> s.inspect(name) instanceof LeaseState.Held h
            && h.remaining().compareTo(before.minusMillis(300)) < 0);
    Duration beforeRenew = ((LeaseState.Held) s.inspect(name)).remaining();
    LeaseGrant g2 = granted(s.acquireOrRenew(name, a, ttl()), "renewal");
    assertThat(g2.token()).isEqualTo(g1.token());
    LeaseState.Held after = (LeaseState.Held) s.inspect(name);
    assertThat(after.remaining()).isGreaterThan(beforeRenew);
    assertThat(after.expiresAt()).isAfter(g1.expiresAt());
    assertThat(after.lastToken()).isEqualTo(g1.token());
  }

  @Test
  void contenderGetsNothingWhileHeldAndChangesNothing() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant g = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(s2.acquireOrRenew(name, b, ttl())).isEmpty();
    LeaseState.Held held = (LeaseState.Held) s2.inspect(name);
    assertThat(held.holder()).isEqualTo(a);
    assertThat(held.lastToken()).isEqualTo(g.token());
    assertThat(s2.token(name)).hasValue(g.token());
    assertThat(granted(s1.acquireOrRenew(name, a, ttl()), "renewal").token()).isEqualTo(g.token());
  }

  @Test
  void afterExpiryAnotherHolderGetsLargerToken() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(s2.acquireOrRenew(name, b, ttl())).isEmpty();
    List<LeaseGrant> got = new ArrayList<>();
    await("b acquires after a's expiry").atMost(expiryWait()).pollInterval(Duration.ofMillis(20))
        .until(() -> s2.acquireOrRenew(name, b, ttl()).map(got::add).orElse(false));
    assertThat(got.get(0).token()).isGreaterThan(ga.token());
    assertThat(got.get(0).holder()).isEqualTo(b);
  }

  @Test
  void sixteenThreadsRacingForAFreeLeaseGetExactlyOneGrantPerRound() throws Exception {
    int threads = 16;
    int rounds = 5;
    List<LeaseStore> clients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      clients.add(store());
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < rounds; round++) {
        String name = leaseName();
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<Optional<LeaseGrant>>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          LeaseStore client = clients.get(t % clients.size());
          HolderId holder = HolderId.generate();
          results.add(pool.submit(() -> {
            start.await(30, TimeUnit.SECONDS);
            return client.acquireOrRenew(name, holder, ttl());
          }));
        }
        List<LeaseGrant> grants = new ArrayList<>();
        for (Future<Optional<LeaseGrant>> f : results) {
          f.get(60, TimeUnit.SECONDS).ifPresent(grants::add);
        }
        assertThat(grants).as("grants in round %d", round).hasSize(1);
        LeaseState.Held held = (LeaseState.Held) clients.get(0).inspect(name);
        assertThat(held.holder()).isEqualTo(grants.get(0).holder());
        assertThat(held.lastToken()).isEqualTo(grants.get(0).token());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void releaseLetsAnotherAcquireAtOnceWithLargerToken() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(s1.release(name, a)).isTrue();
    LeaseState st = s2.inspect(name);
    assertThat(st).isInstanceOf(LeaseState.Free.class);
    assertThat(st.lastToken()).isEqualTo(ga.token());
    LeaseGrant gb = granted(s2.acquireOrRenew(name, b, ttl()), "acquire right after release");
    assertThat(gb.token()).isGreaterThan(ga.token());
  }

  @Test
  void releaseThenReacquireBySameHolderGivesLargerToken() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(s.release(name, a)).isTrue();
    assertThat(s.release(name, a)).as("second release of a free lease").isFalse();
    LeaseGrant g2 = granted(s.acquireOrRenew(name, a, ttl()), "re-acquire");
    assertThat(g2.token()).isGreaterThan(g1.token());
  }

  @Test
  void reacquireAfterOwnExpiryGivesLargerToken() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    awaitNotHeld(s, name);
    LeaseGrant g2 = granted(s.acquireOrRenew(name, a, ttl()), "re-acquire after own expiry");
    assertThat(g2.token()).isGreaterThan(g1.token());
  }

  @Test
  void releaseByNonHolderDoesNothing() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(s2.release(name, b)).isFalse();
    LeaseState.Held held = (LeaseState.Held) s2.inspect(name);
    assertThat(held.holder()).isEqualTo(a);
    assertThat(held.lastToken()).isEqualTo(ga.token());
    assertThat(s2.acquireOrRenew(name, b, ttl())).isEmpty();
    assertThat(granted(s1.acquireOrRenew(name, a, ttl()), "renewal").token()).isEqualTo(ga.token());
  }

  @Test
  void supersededHolderRenewalReturnsEmptyAndLeavesNewHolderIntact() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    List<LeaseGrant> got = new ArrayList<>();
    await("b takes over").atMost(expiryWait()).pollInterval(Duration.ofMillis(20))
        .until(() -> s2.acquireOrRenew(name, b, ttl()).map(got::add).orElse(false));
    LeaseGrant gb = got.get(0);
    assertThat(gb.token()).isGreaterThan(ga.token());
    assertThat(s1.acquireOrRenew(name, a, ttl())).as("stale holder's renewal").isEmpty();
    assertThat(s1.release(name, a)).as("stale holder's release").isFalse();
    LeaseState.Held held = (LeaseState.Held) s2.inspect(name);
    assertThat(held.holder()).isEqualTo(b);
    assertThat(held.lastToken()).isEqualTo(gb.token());
    assertThat(granted(s2.acquireOrRenew(name, b, ttl()), "b renews").token()).isEqualTo(gb.token());
  }

  @Test
  void tokenNeverGoesBackwardsAfterOutOfBandDelete() throws Exception {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    deleteOutOfBand(name);
    LeaseGrant g2 = granted(s.acquireOrRenew(name, b, ttl()), "acquire after out-of-band delete");
    assertThat(g2.token()).isGreaterThan(g1.token());
    assertThat(s.release(name, b)).isTrue();
    deleteOutOfBand(name);
    LeaseGrant g3 = granted(s.acquireOrRenew(name, a, ttl()), "acquire after release and delete");
    assertThat(g3.token()).isGreaterThan(g2.token());
  }

  @Test
  void inspectTellsFreeHeldAndExpiredApart() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseState fresh = s.inspect(name);
    assertThat(fresh.status()).as("a name never granted").isEqualTo(LeaseState.Status.FREE);
    long freshBound = Math.max(fresh.lastToken(), s.token(name).orElse(0));
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(g1.token()).as("first grant above the bound answered for a fresh name")
        .isGreaterThan(freshBound);
    assertThat(s.inspect(name).status()).isEqualTo(LeaseState.Status.HELD);
    assertThat(s.release(name, a)).isTrue();
    assertThat(s.inspect(name)).isEqualTo(new LeaseState.Free(name, g1.token()));
    LeaseGrant g2 = granted(s.acquireOrRenew(name, a, ttl()), "acquire again");
    awaitNotHeld(s, name);
    LeaseState st = s.inspect(name);
    assertThat(st).as("a lease whose holder stopped renewing is EXPIRED, not FREE")
        .isInstanceOf(LeaseState.Expired.class);
    LeaseState.Expired expired = (LeaseState.Expired) st;
    assertThat(expired.holder()).isEqualTo(a);
    assertThat(expired.lastToken()).isEqualTo(g2.token());
    assertThat(s.token(name)).hasValue(g2.token());
  }

  @Test
  void tokenReportsTheHighestIssued() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    long last = 0;
    for (int i = 0; i < 4; i++) {
      HolderId h = i % 2 == 0 ? a : b;
      LeaseGrant g = granted(s.acquireOrRenew(name, h, ttl()), "tenure " + i);
      assertThat(g.token()).isGreaterThan(last);
      last = g.token();
      assertThat(s.token(name)).hasValue(last);
      assertThat(s.release(name, h)).isTrue();
      assertThat(s.token(name)).hasValue(last);
    }
  }

  /** Names that are syntax somewhere: SQL, array literals, key patterns, JSON, paths. */
  private static List<String> unusualNames(String suffix) {
    return List.of(
        "quote'\"" + suffix,
        "x'); DROP TABLE leases; --" + suffix,
        "{tag}:*?[brace]" + suffix,
        "{a,b}\\\"c\\" + suffix,
        "NULL" + suffix,
        "spaces and ünïcödé ✓ " + suffix,
        "Case" + suffix,
        "case" + suffix,
        ("long-" + suffix + "-").repeat(20).substring(0, 200));
  }

  @Test
  void unusualNamesAreDataNotSyntax() {
    LeaseStore s = store();
    String suffix = leaseName();
    List<String> names = unusualNames(suffix);
    HolderId a = HolderId.generate();
    List<Long> tokens = new ArrayList<>();
    for (String n : names) {
      LeaseGrant g = granted(s.acquireOrRenew(n, a, ttl()), "acquire '" + n + "'");
      tokens.add(g.token());
      LeaseState.Held held = (LeaseState.Held) s.inspect(n);
      assertThat(held.name()).isEqualTo(n);
      assertThat(held.lastToken()).isEqualTo(g.token());
    }
    HolderId b = HolderId.generate();
    for (String n : names) {
      assertThat(s.acquireOrRenew(n, b, ttl())).as("'%s' is held by a", n).isEmpty();
    }
    for (String n : names) {
      assertThat(s.release(n, a)).as("release '%s'", n).isTrue();
      assertThat(s.inspect(n).status()).isEqualTo(LeaseState.Status.FREE);
    }
  }

  // ---------------------------------------------------------------- batch calls

  private static AcquireResult answer(Map<String, AcquireResult> answers, String name) {
    AcquireResult a = answers.get(name);
    assertThat(a).as("the batch's answer for '%s' (every name gets one)", name).isNotNull();
    assertThat(a.name()).isEqualTo(name);
    return a;
  }

  private static LeaseGrant batchGranted(Map<String, AcquireResult> answers, String name,
      String what) {
    AcquireResult a = answer(answers, name);
    assertThat(a).as("%s: '%s' must be granted, as its single call would be", what, name)
        .isInstanceOf(AcquireResult.Granted.class);
    return ((AcquireResult.Granted) a).lease();
  }

  private static void batchRefused(Map<String, AcquireResult> answers, String name, HolderId by,
      long token, String what) {
    AcquireResult a = answer(answers, name);
    assertThat(a).as("%s: '%s' must be refused, as its single call would be", what, name)
        .isInstanceOf(AcquireResult.Refused.class);
    ((AcquireResult.Refused) a).heldBy().ifPresent(held -> {
      assertThat(held.holder()).as("the holder a refusal of '%s' names", name).isEqualTo(by);
      assertThat(held.lastToken()).as("the token a refusal of '%s' names", name).isEqualTo(token);
      assertThat(held.remaining()).as("how long '%s' stays held, by the store", name)
          .isPositive();
    });
  }

  @Test
  void batchOfMixedNamesGetsExactlyTheOutcomesTheSingleCallsWouldGive() {
    LeaseStore s = store();
    LeaseStore other = store();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    String free = leaseName();
    String heldByOther = leaseName();
    String expired = leaseName();
    String own = leaseName();
    String released = leaseName();
    long freeBound = Math.max(s.inspect(free).lastToken(), s.token(free).orElse(0));
    LeaseGrant gExpired = granted(other.acquireOrRenew(expired, b, ttl()), "b takes 'expired'");
    awaitNotHeld(s, expired);
    LeaseGrant gOther = granted(other.acquireOrRenew(heldByOther, b, ttl()), "b takes 'held'");
    LeaseGrant gOwn = granted(s.acquireOrRenew(own, a, ttl()), "a takes 'own'");
    LeaseGrant gReleased = granted(other.acquireOrRenew(released, b, ttl()), "b takes 'released'");
    assertThat(other.release(released, b)).isTrue();

    List<String> names = List.of(free, heldByOther, expired, own, released);
    Map<String, AcquireResult> first = s.acquireOrRenewAll(names, a, ttl());
    assertThat(first.keySet()).as("one answer per name").containsExactlyInAnyOrderElementsOf(names);
    LeaseGrant f = batchGranted(first, free, "a free name");
    assertThat(f.token()).isGreaterThan(freeBound);
    batchRefused(first, heldByOther, b, gOther.token(), "a name another holder has");
    assertThat(batchGranted(first, expired, "a name whose holder's lease expired").token())
        .as("a new tenure after another's expiry").isGreaterThan(gExpired.token());
    LeaseGrant renewed = batchGranted(first, own, "the holder's own name");
    assertThat(renewed.token()).as("a renewal keeps the token").isEqualTo(gOwn.token());
    assertThat(batchGranted(first, released, "a released name").token())
        .isGreaterThan(gReleased.token());
    for (String n : List.of(free, expired, own, released)) {
      LeaseGrant g = ((AcquireResult.Granted) first.get(n)).lease();
      assertThat(g.holder()).isEqualTo(a);
      assertThat(g.ttl()).isGreaterThanOrEqualTo(ttl());
      LeaseState st = other.inspect(n);
      assertThat(st).as("'%s' after the batch, read by another client", n)
          .isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) st).holder()).isEqualTo(a);
      assertThat(st.lastToken()).isEqualTo(g.token());
    }
    LeaseState.Held stillB = (LeaseState.Held) other.inspect(heldByOther);
    assertThat(stillB.holder()).as("a refused name is left as it was").isEqualTo(b);
    assertThat(stillB.lastToken()).isEqualTo(gOther.token());

    Map<String, AcquireResult> again = s.acquireOrRenewAll(names, a, ttl());
    for (String n : List.of(free, expired, own, released)) {
      assertThat(batchGranted(again, n, "renewing by batch").token()).as("'%s' renewed", n)
          .isEqualTo(((AcquireResult.Granted) first.get(n)).lease().token());
    }
    batchRefused(again, heldByOther, b, gOther.token(), "still another holder's");
    Map<String, Boolean> gone = s.releaseAll(names, a);
    assertThat(gone).containsEntry(own, true).containsEntry(heldByOther, false);
    Map<String, AcquireResult> next = s.acquireOrRenewAll(List.of(own, free), a, ttl());
    assertThat(batchGranted(next, own, "re-acquire after release").token())
        .as("a new tenure after release").isGreaterThan(renewed.token());
    assertThat(batchGranted(next, free, "re-acquire after release").token())
        .isGreaterThan(f.token());
  }

  @Test
  void batchReleaseOfMixedNamesReleasesOnlyWhatTheHolderHoldsAndWakesSubscribers() {
    LeaseStore s = store();
    LeaseStore other = store();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    String mine1 = leaseName();
    String mine2 = leaseName();
    String theirs = leaseName();
    String never = leaseName();
    String alreadyFree = leaseName();
    LeaseGrant g1 = granted(s.acquireOrRenew(mine1, a, ttl()), "acquire");
    LeaseGrant g2 = granted(s.acquireOrRenew(mine2, a, ttl()), "acquire");
    LeaseGrant gb = granted(other.acquireOrRenew(theirs, b, ttl()), "b acquires");
    LeaseGrant gf = granted(s.acquireOrRenew(alreadyFree, a, ttl()), "acquire");
    assertThat(s.release(alreadyFree, a)).isTrue();
    AtomicInteger woken1 = new AtomicInteger();
    AtomicInteger woken2 = new AtomicInteger();
    other.onRelease(mine1, woken1::incrementAndGet);
    other.onRelease(mine2, woken2::incrementAndGet);

    Map<String, Boolean> r = s.releaseAll(List.of(mine1, theirs, never, alreadyFree, mine2), a);
    assertThat(r).containsExactly(Map.entry(mine1, true), Map.entry(theirs, false),
        Map.entry(never, false), Map.entry(alreadyFree, false), Map.entry(mine2, true));
    assertThat(other.inspect(mine1)).isEqualTo(new LeaseState.Free(mine1, g1.token()));
    assertThat(other.inspect(mine2)).isEqualTo(new LeaseState.Free(mine2, g2.token()));
    assertThat(other.inspect(alreadyFree)).isEqualTo(new LeaseState.Free(alreadyFree, gf.token()));
    LeaseState.Held held = (LeaseState.Held) other.inspect(theirs);
    assertThat(held.holder()).as("another holder's name is untouched").isEqualTo(b);
    assertThat(held.lastToken()).isEqualTo(gb.token());
    assertThat(other.inspect(never).status()).isEqualTo(LeaseState.Status.FREE);
    assertThat(s.releaseAll(List.of(mine1, mine2), a).values()).as("a second release")
        .containsOnly(false);
    if (deliversReleaseHints()) {
      await("each released name's subscriber is woken").atMost(Duration.ofSeconds(10))
          .until(() -> woken1.get() > 0 && woken2.get() > 0);
    }
  }

  @Test
  void batchWithAMalformedRepeatedOrMissingNameIsRefusedBeforeAnythingChanges() {
    LeaseStore s = store();
    HolderId a = HolderId.generate();
    String free1 = leaseName();
    String free2 = leaseName();
    String own = leaseName();
    LeaseGrant g = granted(s.acquireOrRenew(own, a, ttl()), "acquire");
    List<List<String>> bad = List.of(
        List.of(free1, free2, own + "\uD800"),
        List.of(free1, free2, " "),
        List.of(free1, free2, "x".repeat(201)),
        List.of(free1, free2, "tab\tname"));
    for (List<String> batch : bad) {
      assertThatThrownBy(() -> s.acquireOrRenewAll(batch, a, ttl()))
          .as("acquire batch ending in %s", escapeSurrogates(batch.get(2)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
      assertThatThrownBy(() -> s.releaseAll(List.of(own, batch.get(2)), a))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
    }
    List<String> withNull = new ArrayList<>(List.of(free1, free2));
    withNull.add(null);
    assertThatThrownBy(() -> s.acquireOrRenewAll(withNull, a, ttl()))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("lease name");
    assertThatThrownBy(() -> s.acquireOrRenewAll(List.of(free1, free2, free1), a, ttl()))
        .as("a repeated name is refused (one answer per name)")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("repeats")
        .hasMessageContaining(free1);
    assertThatThrownBy(() -> s.releaseAll(List.of(own, own), a))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("repeats");
    assertThatThrownBy(() -> s.acquireOrRenewAll(List.of(free1, free2), a,
        s.ttlRange().max().plusDays(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl");
    assertThat(s.inspect(free1).status()).as("nothing of a refused batch was sent")
        .isEqualTo(LeaseState.Status.FREE);
    assertThat(s.inspect(free2).status()).isEqualTo(LeaseState.Status.FREE);
    LeaseState.Held held = (LeaseState.Held) s.inspect(own);
    assertThat(held.holder()).as("a refused release batch released nothing").isEqualTo(a);
    assertThat(held.lastToken()).isEqualTo(g.token());
    assertThat(s.acquireOrRenewAll(List.of(), a, ttl())).isEmpty();
    assertThat(s.releaseAll(List.of(), a)).isEmpty();
  }

  @Test
  void batchAtTheSizeLimitWorksAndOneAboveItIsRefusedWithTheLimitInTheMessage() {
    LeaseStore s = store();
    HolderId a = HolderId.generate();
    String base = leaseName();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < LeaseStore.MAX_BATCH_SIZE + 1; i++) {
      names.add(base + "-" + i);
    }
    assertThatThrownBy(() -> s.acquireOrRenewAll(names, a, ttl()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(String.valueOf(LeaseStore.MAX_BATCH_SIZE))
        .hasMessageContaining("split");
    assertThatThrownBy(() -> s.releaseAll(names, a)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(String.valueOf(LeaseStore.MAX_BATCH_SIZE));
    assertThat(s.inspect(names.get(0)).status()).isEqualTo(LeaseState.Status.FREE);
    List<String> full = names.subList(0, LeaseStore.MAX_BATCH_SIZE);
    // long enough that no name expires while a one-call-per-name default works through the rest
    Duration longTtl = longTtl();
    Map<String, AcquireResult> got = s.acquireOrRenewAll(full, a, longTtl);
    assertThat(got.keySet()).as("one answer per name, in order").containsExactlyElementsOf(full);
    assertThat(got.values()).as("a full batch of free names")
        .allMatch(x -> x instanceof AcquireResult.Granted);
    assertThat(s.releaseAll(full, a).values()).as("releasing the full batch").containsOnly(true);
  }

  @Test
  void unusualNamesInABatchAreDataNotSyntax() {
    LeaseStore s = store();
    LeaseStore other = store();
    String suffix = leaseName();
    List<String> names = unusualNames(suffix);
    HolderId a = HolderId.generate();
    Map<String, AcquireResult> got = s.acquireOrRenewAll(names, a, ttl());
    for (String n : names) {
      LeaseGrant g = batchGranted(got, n, "an unusual name");
      LeaseState.Held held = (LeaseState.Held) other.inspect(n);
      assertThat(held.name()).isEqualTo(n);
      assertThat(held.lastToken()).isEqualTo(g.token());
    }
    for (String n : List.of("a", "b", "c", "NULL", "{tag}:*?[brace]", suffix)) {
      assertThat(other.inspect(n).status()).as("'%s' must not have been granted by the batch", n)
          .isNotEqualTo(LeaseState.Status.HELD);
    }
    HolderId b = HolderId.generate();
    Map<String, AcquireResult> refused = other.acquireOrRenewAll(names, b, ttl());
    for (String n : names) {
      batchRefused(refused, n, a, ((AcquireResult.Granted) got.get(n)).lease().token(),
          "held by a");
    }
    assertThat(s.releaseAll(names, a).values()).containsOnly(true);
  }

  /**
   * Shared fate (see "Batches" in {@link LeaseStore}): when the server-side lease or session behind
   * one of a holder's names ends, every name tied to it is lost at once — none may be renewed with
   * its old token — while another holder's names are untouched. A store that ties nothing together
   * must keep names independent: releasing one leaves the others held with their tokens.
   */
  @Test
  void sharedFateLossLosesEveryTiedNameAtOnceAndNothingElse() throws Exception {
    LeaseStore s = store();
    LeaseStore other = store();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    List<String> batch = List.of(leaseName(), leaseName(), leaseName());
    String single = leaseName();
    String others = leaseName();
    // a TTL far longer than the wait below: a name that is lost within the wait was lost with the
    // ended lease or session, not by expiring on its own
    Duration longTtl = longTtl();
    Duration lossWait = Duration.ofSeconds(10);
    Map<String, Long> tokens = new LinkedHashMap<>();
    Map<String, AcquireResult> first = s.acquireOrRenewAll(batch, a, longTtl);
    for (String n : batch) {
      tokens.put(n, batchGranted(first, n, "a free name").token());
    }
    tokens.put(single, granted(s.acquireOrRenew(single, a, longTtl), "a single acquire").token());
    LeaseGrant gB = granted(other.acquireOrRenew(others, b, longTtl), "b takes its own name");
    if (!endSharedFate(batch.get(0))) {
      assertThat(s.release(batch.get(0), a)).isTrue();
      for (String n : List.of(batch.get(1), batch.get(2), single)) {
        LeaseState st = other.inspect(n);
        assertThat(st).as("'%s' after another of the holder's names was released: a store that"
            + " ties no names together (endSharedFate false) must leave it held", n)
            .isInstanceOf(LeaseState.Held.class);
        assertThat(((LeaseState.Held) st).holder()).isEqualTo(a);
        assertThat(st.lastToken()).isEqualTo(tokens.get(n));
        assertThat(granted(s.acquireOrRenew(n, a, longTtl), "renewing " + n).token())
            .as("'%s' renewed with its token", n).isEqualTo(tokens.get(n));
      }
    } else {
      await("every name of the batch (TTL " + longTtl + ") is no longer held by its holder within "
          + lossWait + " of endSharedFate: names acquired in one batch must share the ended lease"
          + " or session").atMost(lossWait).pollInterval(Duration.ofMillis(20))
          .until(() -> batch.stream().noneMatch(n -> heldBy(other, n, a)));
      // the single acquire may or may not share the batch's lease or session: either it was lost
      // with them, or it is still held with its token
      List<String> tied = new ArrayList<>(batch);
      if (heldBy(other, single, a)) {
        assertThat(other.inspect(single).lastToken()).as("'%s', not tied to the batch's lease or"
            + " session, keeps its token", single).isEqualTo(tokens.get(single));
      } else {
        tied.add(single);
      }
      Map<String, AcquireResult> again = s.acquireOrRenewAll(tied, a, longTtl);
      for (String n : tied) {
        answer(again, n).grant().ifPresent(g -> assertThat(g.token()).as("'%s' was lost with the"
            + " shared lease or session: its next grant is a new tenure, never a renewal of the"
            + " old token", n).isGreaterThan(tokens.get(n)));
      }
    }
    LeaseState st = other.inspect(others);
    assertThat(st).as("another holder's name is untouched by the first holder's loss")
        .isInstanceOf(LeaseState.Held.class);
    assertThat(((LeaseState.Held) st).holder()).isEqualTo(b);
    assertThat(st.lastToken()).isEqualTo(gB.token());
    s.releaseAll(List.of(batch.get(0), batch.get(1), batch.get(2), single), a);
    other.release(others, b);
  }

  private static boolean heldBy(LeaseStore s, String name, HolderId holder) {
    return s.inspect(name) instanceof LeaseState.Held h && h.holder().equals(holder);
  }

  /**
   * Four holders batch the same 250 names at once, each in its own order, six times: every name
   * goes to exactly one of them and no batch fails. A native batch that inserts or locks its rows in
   * the caller's order (not one order for everyone) deadlocks here.
   */
  @Test
  void holdersBatchingOverlappingNamesInDifferentOrdersSplitThemWithoutErrors() throws Exception {
    int holders = 4;
    int rounds = 6;
    List<LeaseStore> clients = new ArrayList<>();
    for (int i = 0; i < holders; i++) {
      clients.add(store());
    }
    ExecutorService pool = Executors.newFixedThreadPool(holders);
    try {
      for (int round = 0; round < rounds; round++) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 250; i++) {
          names.add(leaseName());
        }
        CyclicBarrier start = new CyclicBarrier(holders);
        List<HolderId> ids = new ArrayList<>();
        List<Future<Map<String, AcquireResult>>> results = new ArrayList<>();
        for (int t = 0; t < holders; t++) {
          LeaseStore client = clients.get(t);
          HolderId holder = HolderId.generate();
          ids.add(holder);
          List<String> mine = new ArrayList<>(names);
          java.util.Collections.shuffle(mine, new Random(round * 31L + t));
          results.add(pool.submit(() -> {
            start.await(30, TimeUnit.SECONDS);
            return client.acquireOrRenewAll(mine, holder, longTtl()); // checked after all 4 batches
          }));
        }
        Map<String, HolderId> winners = new java.util.HashMap<>();
        for (int t = 0; t < holders; t++) {
          Map<String, AcquireResult> answers = results.get(t).get(60, TimeUnit.SECONDS);
          for (AcquireResult a : answers.values()) {
            if (a instanceof AcquireResult.Granted) {
              assertThat(winners.put(a.name(), ids.get(t))).as("'%s' granted twice", a.name())
                  .isNull();
            }
          }
        }
        assertThat(winners.keySet()).as("every name granted to exactly one holder in round %d",
            round).containsExactlyInAnyOrderElementsOf(names);
        for (String n : names) {
          assertThat(((LeaseState.Held) clients.get(0).inspect(n)).holder())
              .isEqualTo(winners.get(n));
        }
        for (int t = 0; t < holders; t++) {
          clients.get(t).releaseAll(names, ids.get(t));
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  // ---------------------------------------------------------------- review's bug classes

  @Test
  void contenderIsRefusedUntilTheGrantedTtlHasPassedSinceTheHolderSentItsRequest() {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    for (String phase : List.of("acquire", "renewal")) {
      String n = name + "-" + phase;
      long sent = System.nanoTime();
      LeaseGrant g = granted(s1.acquireOrRenew(n, a, ttl()), phase);
      if (phase.equals("renewal")) {
        long acquiredAt = sent;
        await("time passes before the renewal").atMost(expiryWait()).pollInterval(Duration.ofMillis(20))
            .until(() -> System.nanoTime() - acquiredAt > ttl().toNanos() / 2);
        sent = System.nanoTime();
        g = granted(s1.acquireOrRenew(n, a, ttl()), "renewal");
      }
      long requestSent = sent;
      Duration granted = g.ttl();
      List<Long> tookNanos = new ArrayList<>();
      await("the contender gets " + n + " after its expiry").atMost(expiryWait())
          .pollInterval(Duration.ofMillis(10))
          .until(() -> {
            boolean got = s2.acquireOrRenew(n, b, ttl()).isPresent();
            if (got) {
              tookNanos.add(System.nanoTime() - requestSent);
            }
            return got;
          });
      Duration took = Duration.ofNanos(tookNanos.get(0));
      assertThat(took).as("%s: a contender polling directly was granted %s after the holder sent"
              + " its request, but the store granted the holder %s: it must not free a lease before"
              + " the TTL it reported has passed (measure it from when the request arrived)",
              phase, took, granted)
          .isGreaterThanOrEqualTo(granted.minusMillis(25));
    }
  }

  @Test
  void inspectNeverAnswersFromACache() {
    LeaseStore s1 = store();
    LeaseStore observer = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    assertThat(observer.inspect(name).status()).as("before any grant").isEqualTo(LeaseState.Status.FREE);
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "acquire");
    assertThat(observer.inspect(name)).as("another client's grant must be visible at once:"
        + " inspect reads the store, never a cache").isInstanceOf(LeaseState.Held.class);
    assertThat(((LeaseState.Held) observer.inspect(name)).holder()).isEqualTo(a);
    assertThat(observer.token(name)).as("token(name) after another client's grant").hasValue(ga.token());
    assertThat(s1.release(name, a)).isTrue();
    assertThat(observer.inspect(name).status()).as("another client's release must be visible at once")
        .isEqualTo(LeaseState.Status.FREE);
    LeaseGrant gb = granted(s1.acquireOrRenew(name, b, ttl()), "acquire by b");
    LeaseState seen = observer.inspect(name);
    assertThat(seen).as("the next holder must be visible at once").isInstanceOf(LeaseState.Held.class);
    assertThat(((LeaseState.Held) seen).holder()).isEqualTo(b);
    assertThat(seen.lastToken()).isEqualTo(gb.token());
  }

  @Test
  void releaseAfterTheHoldersOwnExpiryReportsFalseAndChangesNothing() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    awaitNotHeld(s, name);
    assertThat(s.release(name, a)).as("release(name, holder) after the holder's own expiry: the"
        + " holder did not hold an unexpired lease, so it must answer false").isFalse();
    LeaseState st = s.inspect(name);
    assertThat(st.status()).as("state after a late release").isNotEqualTo(LeaseState.Status.HELD);
    assertThat(st.lastToken()).as("a late release keeps the token").isGreaterThanOrEqualTo(g.token());
    LeaseGrant next = granted(s.acquireOrRenew(name, HolderId.generate(), ttl()), "next holder");
    assertThat(next.token()).isGreaterThan(g.token());
  }

  @Test
  void renewalAfterAnOutOfBandDeleteAndAnotherHoldersGrantReturnsEmpty() throws Exception {
    LeaseStore s1 = store();
    LeaseStore s2 = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = granted(s1.acquireOrRenew(name, a, ttl()), "a acquires");
    deleteOutOfBand(name);
    LeaseGrant gb = granted(s2.acquireOrRenew(name, b, ttl()), "b acquires after the delete");
    assertThat(gb.token()).isGreaterThan(ga.token());
    assertThat(s1.acquireOrRenew(name, a, ttl())).as("a's renewal after its record was deleted and b"
        + " was granted: it must return empty (check ownership after extending, not before)").isEmpty();
    assertThat(s1.release(name, a)).as("a's release of b's lease").isFalse();
    LeaseState st = s2.inspect(name);
    assertThat(st).isInstanceOf(LeaseState.Held.class);
    assertThat(((LeaseState.Held) st).holder()).as("holder after a's stale renewal").isEqualTo(b);
    assertThat(st.lastToken()).isEqualTo(gb.token());
    assertThat(granted(s2.acquireOrRenew(name, b, ttl()), "b renews").token()).isEqualTo(gb.token());
  }

  @Test
  void tokenAfterAnOutOfBandDeleteNeverAnswersBelowWhatWasIssued() throws Exception {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g1 = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    deleteOutOfBand(name);
    long bound = s.token(name).orElse(0);
    assertThat(bound).as("token(name) after an out-of-band delete must still be >= every token"
        + " issued for the name (answer a store-wide bound when the record is gone)")
        .isGreaterThanOrEqualTo(g1.token());
    long inspected = s.inspect(name).lastToken();
    assertThat(inspected).as("inspect(name).lastToken() after an out-of-band delete")
        .isGreaterThanOrEqualTo(g1.token());
    LeaseGrant g2 = granted(s.acquireOrRenew(name, HolderId.generate(), ttl()), "acquire after delete");
    assertThat(g2.token()).as("the next grant must be above the bound token(name) answered")
        .isGreaterThan(Math.max(bound, inspected));
    assertThat(s.token(name)).hasValue(g2.token());
  }

  @Test
  void malformedUtf16NamesAreRefusedAndLoseNothing() {
    LeaseStore s = store();
    String base = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant question = granted(s.acquireOrRenew(base + "c?x", a, ttl()), "acquire 'c?x'");
    for (String bad : List.of(base + "c\uD800x", base + "c\uDC00x", base + "\uDBFF", "\uDC00" + base)) {
      String shown = escapeSurrogates(bad);
      List<Supplier<Object>> calls = List.of(
          () -> s.acquireOrRenew(bad, a, ttl()), () -> s.release(bad, a), () -> s.inspect(bad),
          () -> s.token(bad), () -> s.onRelease(bad, () -> {}));
      for (Supplier<Object> call : calls) {
        assertThatThrownBy(call::get).as("a name with an unpaired surrogate (%s) must be refused:"
                + " it has no UTF-8 encoding and would collide with other names", shown)
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
      }
    }
    assertThatThrownBy(() -> new HolderId("w\uD800")).isInstanceOf(IllegalArgumentException.class);
    LeaseState st = s.inspect(base + "c?x");
    assertThat(st).as("'c?x' is untouched by the refused calls").isInstanceOf(LeaseState.Held.class);
    assertThat(st.lastToken()).isEqualTo(question.token());
    String pair = base + "c\uD83D\uDE00x";
    HolderId b = HolderId.generate();
    LeaseGrant emoji = granted(s.acquireOrRenew(pair, b, ttl()), "a complete surrogate pair is a"
        + " character like any other and its own lease");
    assertThat(((LeaseState.Held) s.inspect(pair)).holder()).isEqualTo(b);
    assertThat(emoji.token()).isNotEqualTo(question.token());
  }

  private static String escapeSurrogates(String s) {
    StringBuilder sb = new StringBuilder();
    for (char c : s.toCharArray()) {
      sb.append(Character.isSurrogate(c) ? String.format("\\u%04X", (int) c) : String.valueOf(c));
    }
    return sb.toString();
  }

  @Test
  void namesThatDifferOnlyInWhiteSpaceOrTheirLastCharacterAreDistinctLeases() {
    LeaseStore s = store();
    String base = leaseName();
    String long1 = (base + "-").repeat(20).substring(0, 199) + "a";
    String long2 = long1.substring(0, 199) + "b";
    List<String> names = List.of(base, " " + base, base + " ", base + "  ", "\u00A0" + base,
        long1, long2);
    List<HolderId> holders = new ArrayList<>();
    for (String n : names) {
      HolderId h = HolderId.generate();
      holders.add(h);
      granted(s.acquireOrRenew(n, h, ttl()), "acquire '" + n + "' (" + n.length() + " chars): a"
          + " store that trims, truncates or normalises names merges distinct leases");
    }
    for (int i = 0; i < names.size(); i++) {
      LeaseState st = s.inspect(names.get(i));
      assertThat(st).as("'%s'", names.get(i)).isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) st).holder()).as("holder of '%s'", names.get(i))
          .isEqualTo(holders.get(i));
      assertThat(st.name()).isEqualTo(names.get(i));
    }
  }

  @Test
  void callsStayBoundedWhileTheConnectionToTheStoreIsStalledOrCut() throws Exception {
    Duration bound = Duration.ofSeconds(1);
    Duration grace = Duration.ofSeconds(4);
    try (TcpProxy proxy = new TcpProxy(storePort())) {
      LeaseStore s = newStoreVia(proxy.port(), bound);
      closeables.add(s);
      String name = leaseName();
      HolderId a = HolderId.generate();
      granted(s.acquireOrRenew(name, a, ttl()), "acquire through the proxy");
      for (String fault : List.of("stall", "cut")) {
        if (fault.equals("stall")) {
          proxy.stall();
        } else {
          proxy.cut();
        }
        List<Supplier<Object>> calls = List.of(() -> s.acquireOrRenew(name, a, ttl()),
            () -> s.inspect(name), () -> s.token(name), () -> s.release(name, a));
        for (int i = 0; i < calls.size(); i++) {
          Supplier<Object> call = calls.get(i);
          long t0 = System.nanoTime();
          assertThatThrownBy(call::get).as("call %d while the connection is %sed: an unreachable"
                  + " store must fail closed with LeaseStoreUnavailableException", i, fault)
              .isInstanceOf(LeaseStoreUnavailableException.class);
          Duration took = Duration.ofNanos(System.nanoTime() - t0);
          assertThat(took).as("call %d while %sed, bounded by %s: it must not wait longer", i,
              fault, bound).isLessThanOrEqualTo(bound.plus(grace));
        }
        proxy.forward();
        await("the store answers again after the " + fault).atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(100)).ignoreExceptionsInstanceOf(
                LeaseStoreUnavailableException.class)
            .until(() -> s.inspect(name) != null);
      }
    }
  }

  @Test
  void releaseFromAnotherJvmWakesAFollowerHere() throws Exception {
    String name = leaseName();
    Duration ttl = ttl();
    try (LeaderProcess child = LeaderProcess.start(storeRecipe(), name, ttl, ttl.dividedBy(3))) {
      closeables.add(child);
      String acquired = child.awaitLine("ACQUIRED ", 0, expiryWait().plusSeconds(20));
      long t1 = Long.parseLong(acquired.substring("ACQUIRED ".length()));
      CountingLeaseStore followerStore = new CountingLeaseStore(store());
      LeaderLoop follower = loop(followerStore, name);
      follower.start();
      await("the follower has read the lease's expiry").atMost(Duration.ofSeconds(10))
          .until(() -> followerStore.expiryReads() > 0);
      int from = child.lineCount();
      long closedAt = System.nanoTime();
      child.send("CLOSE");
      long t2 = follower.awaitLeadership(expiryWait());
      Duration took = Duration.ofNanos(System.nanoTime() - closedAt);
      child.awaitLine("CLOSED", from, Duration.ofSeconds(10));
      assertThat(t2).isGreaterThan(t1);
      Duration limit = deliversReleaseHints() ? Duration.ofSeconds(1)
          : ttl.plus(ttl.dividedBy(3)).plus(expirySlack());
      assertThat(took).as("handover after another JVM released the lease (release hints %s)",
          deliversReleaseHints() ? "declared: the follower must be woken" : "not declared")
          .isLessThanOrEqualTo(limit);
    }
  }

  /**
   * a store that declares release hints delivers one to another client's subscriber after
   * a release (and after an out-of-band delete when it says so). Each poll releases again, so a
   * subscription that becomes active a little after {@code onRelease} returns still passes; a store
   * that never delivers fails deterministically, unlike the handover-time scenarios, whose margin is
   * the follower's remaining sleep.
   */
  @Test
  void releaseAndDeleteHintsReachAnotherClientsSubscriber() {
    if (!deliversReleaseHints()) {
      assertThat(store().onRelease(leaseName(), () -> {})).as("a store without hints still returns"
          + " a subscription handle").isNotNull();
      return;
    }
    LeaseStore holderClient = store();
    LeaseStore follower = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    Duration ttl = ttl();
    AtomicInteger hints = new AtomicInteger();
    try (LeaseStore.Subscription sub = follower.onRelease(name, hints::incrementAndGet)) {
      await("a hint reaches another client's subscriber after a release")
          .atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(200))
          .until(() -> {
            granted(holderClient.acquireOrRenew(name, a, ttl), "acquire");
            assertThat(holderClient.release(name, a)).isTrue();
            return hints.get() > 0;
          });
      if (deliversHintsOnOutOfBandDelete()) {
        int before = hints.get();
        await("a hint reaches another client's subscriber after an out-of-band delete")
            .atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(200))
            .until(() -> {
              if (hints.get() > before) {
                return true;
              }
              granted(holderClient.acquireOrRenew(name, a, ttl), "acquire");
              int beforeDelete = hints.get();
              deleteOutOfBand(name);
              return hints.get() > beforeDelete;
            });
      }
    }
  }
  /**
   * subscriptions to one name are independent: closing one (twice) silences only its listener, and
   * a listener that throws stays subscribed without keeping the others from running. Stores may
   * share one watch or channel among a name's subscriptions; this is the contract of that sharing.
   */
  @Test
  void subscriptionsToOneNameAreIndependent() {
    LeaseStore holderClient = store();
    LeaseStore follower = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    Duration ttl = ttl();
    AtomicInteger throwing = new AtomicInteger();
    AtomicInteger closed = new AtomicInteger();
    AtomicInteger kept = new AtomicInteger();
    try (LeaseStore.Subscription t = follower.onRelease(name, () -> {
          throwing.incrementAndGet();
          throw new IllegalStateException("a failing listener the store must survive (expected)");
        });
        LeaseStore.Subscription k = follower.onRelease(name, kept::incrementAndGet)) {
      LeaseStore.Subscription c = follower.onRelease(name, closed::incrementAndGet);
      c.close();
      c.close();
      if (!deliversReleaseHints()) {
        assertThat(t).as("a store without hints still returns subscription handles").isNotNull();
        return;
      }
      for (int round = 1; round <= 2; round++) {
        int keptBefore = kept.get();
        int throwingBefore = throwing.get();
        await("release hints reach the open subscriptions (round " + round + ")")
            .atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(200))
            .until(() -> {
              granted(holderClient.acquireOrRenew(name, a, ttl), "acquire");
              assertThat(holderClient.release(name, a)).isTrue();
              return kept.get() > keptBefore && throwing.get() > throwingBefore;
            });
      }
      assertThat(closed.get()).as("hints to a subscription closed before any release").isZero();
    }
  }

  /**
   * clients whose process clocks are an hour apart agree on expiry, because the store
   * judges it. The kit's {@code clientClockSkewedByAnHourChangesNoOutcome} skews the leader loop's
   * clock only, which no store ever sees, so a store that judges expiry by its caller's clock passes
   * it; this one gives the skewed clock to the store's clients.
   */
  @Test
  void storeClientsWithClocksAnHourApartAgreeOnExpiry() {
    Duration ttl = ttl();
    for (Duration skew : List.of(Duration.ofHours(1), Duration.ofHours(-1))) {
      String name = leaseName();
      LeaseStore holderClient =
          newStoreWithClientClock(LeaseClock.skewed(LeaseClock.system(), skew.negated()));
      closeables.add(holderClient);
      LeaseStore contender = newStoreWithClientClock(LeaseClock.skewed(LeaseClock.system(), skew));
      closeables.add(contender);
      HolderId a = HolderId.generate();
      LeaseGrant g = granted(holderClient.acquireOrRenew(name, a, ttl), "acquire");
      assertThat(contender.acquireOrRenew(name, HolderId.generate(), ttl))
          .as("skew %s: a contender whose clock is %s from the holder's must be refused while the"
              + " lease is held: expiry is judged by the store's clock", skew, skew.multipliedBy(2))
          .isEmpty();
      LeaseState seen = contender.inspect(name);
      assertThat(seen).as("skew %s: the contender's view", skew).isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) seen).remaining())
          .as("skew %s: remaining as measured by the store, whatever the caller's clock", skew)
          .isLessThanOrEqualTo(g.ttl().plusMillis(50));
    }
  }
  /**
   * tokens never go backwards across a restart of the store (invariant 3; Redis without
   * persistence must clamp its counter to the server's clock), for the name it knew and for the
   * store-wide bound.
   */
  @Test
  void tokensNeverGoBackwardsAcrossAStoreRestart() throws Exception {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    Duration ttl = ttl();
    long last = 0;
    for (int i = 0; i < 3; i++) {
      last = granted(s.acquireOrRenew(name, a, ttl), "acquire " + i).token();
      assertThat(s.release(name, a)).isTrue();
    }
    restartStore();
    LeaseStore after = store();
    await("the store answers after its restart").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100))
        .ignoreExceptionsInstanceOf(dev.leases.LeaseStoreUnavailableException.class)
        .until(() -> after.inspect(name) != null);
    assertThat(after.token(name).orElse(0)).as("token(name) after a restart of the store: it must"
        + " still fence every token issued before").isGreaterThanOrEqualTo(last);
    LeaseGrant g = granted(after.acquireOrRenew(name, HolderId.generate(), ttl), "acquire after restart");
    assertThat(g.token()).as("the first grant after a restart of the store").isGreaterThan(last);
  }
  // ---------------------------------------------------------------- long random history

  @Test
  void randomHistoryOfThreeHoldersKeepsTokensMonotonic() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId[] holders = {HolderId.generate(), HolderId.generate(), HolderId.generate()};
    Random random = new Random(ThreadLocalRandom.current().nextLong());
    long maxToken = 0;
    HolderId current = null;
    long currentToken = 0;
    long lastGrantNanos = 0;
    int expiries = 0;
    for (int step = 0; step < 60; step++) {
      int op = random.nextInt(10);
      HolderId h = holders[random.nextInt(holders.length)];
      if (op < 6) {
        long sent = System.nanoTime();
        Optional<LeaseGrant> g = s.acquireOrRenew(name, h, ttl());
        boolean tenureSurelyLive = current != null
            && sent - lastGrantNanos < ttl().toNanos() / 2;
        if (g.isPresent()) {
          long t = g.get().token();
          if (h.equals(current) && tenureSurelyLive) {
            assertThat(t).as("step %d: renewal within a tenure keeps the token", step)
                .isEqualTo(currentToken);
          } else if (h.equals(current)) {
            assertThat(t).as("step %d: same holder, tenure may have expired", step)
                .isGreaterThanOrEqualTo(currentToken);
          } else {
            assertThat(current == null || !tenureSurelyLive)
                .as("step %d: %s was granted while %s's tenure was live", step, h, current).isTrue();
            assertThat(t).as("step %d: new tenure", step).isGreaterThan(maxToken);
          }
          if (t != currentToken) {
            assertThat(t).isGreaterThan(maxToken);
          }
          maxToken = Math.max(maxToken, t);
          current = h;
          currentToken = t;
          lastGrantNanos = sent;
        } else {
          assertThat(h).as("step %d: the holder itself was refused", step).isNotEqualTo(
              tenureSurelyLive ? current : null);
        }
      } else if (op < 9) {
        boolean released = s.release(name, h);
        if (released) {
          assertThat(h).as("step %d: only the holder can release", step).isEqualTo(current);
          current = null;
        } else if (h.equals(current) && System.nanoTime() - lastGrantNanos < ttl().toNanos() / 2) {
          fail("step %d: the live holder's release was refused", step);
        }
      } else if (expiries < 3 && current != null) {
        awaitNotHeld(s, name);
        expiries++;
        current = null;
      }
      if (maxToken > 0) {
        assertThat(s.token(name).orElse(0)).as("step %d: token(name) once the name was granted"
            + " must be the latest grant's token", step).isEqualTo(maxToken);
      }
    }
  }

  // ---------------------------------------------------------------- input and lifecycle

  @Test
  void ttlOutsideTheDeclaredRangeFailsFastWithTheRangeInTheMessage() {
    LeaseStore s = store();
    String name = leaseName();
    HolderId a = HolderId.generate();
    LeaseGrant g = granted(s.acquireOrRenew(name, a, ttl()), "acquire");
    TtlRange r = s.ttlRange();
    List<Duration> bad = new ArrayList<>(List.of(Duration.ZERO, Duration.ofMillis(-1),
        r.max().plus(r.granularity())));
    if (r.min().compareTo(Duration.ofNanos(1)) > 0) {
      bad.add(r.min().minusNanos(1));
    }
    for (Duration ttl : bad) {
      assertThatThrownBy(() -> s.acquireOrRenew(name, a, ttl)).as("ttl %s", ttl)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ttl");
    }
    assertThatThrownBy(() -> s.acquireOrRenew(name, a, r.max().plus(r.granularity())))
        .hasMessageContaining(r.min().toString()).hasMessageContaining(r.max().toString());
    assertThatThrownBy(() -> s.acquireOrRenew(name, a, null))
        .isInstanceOfAny(NullPointerException.class, IllegalArgumentException.class);
    for (String badName : new String[] {null, "", "   ", "x".repeat(201), "line\nbreak"}) {
      assertThatThrownBy(() -> s.acquireOrRenew(badName, a, ttl())).as("name %s", badName)
          .isInstanceOfAny(NullPointerException.class, IllegalArgumentException.class)
          .hasMessageContaining("lease name");
      assertThatThrownBy(() -> s.inspect(badName))
          .isInstanceOfAny(NullPointerException.class, IllegalArgumentException.class);
      assertThatThrownBy(() -> s.release(badName, a))
          .isInstanceOfAny(NullPointerException.class, IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> s.acquireOrRenew(name, null, ttl()))
        .isInstanceOfAny(NullPointerException.class, IllegalArgumentException.class);
    LeaseState.Held held = (LeaseState.Held) s.inspect(name);
    assertThat(held.holder()).as("bad calls lose nothing").isEqualTo(a);
    assertThat(held.lastToken()).isEqualTo(g.token());
  }

  @Test
  void closedStoreFailsLaterCallsAndLeavesNoNonDaemonThreads() {
    LeaseStore other = store();
    ttl();
    Set<Long> before = nonDaemonThreads().stream().map(Thread::getId).collect(Collectors.toSet());
    LeaseStore s = newStore();
    String name = leaseName();
    HolderId a = HolderId.generate();
    // held well past the close below, however slowly the store closes
    granted(s.acquireOrRenew(name, a, longTtl()), "acquire");
    LeaseStore.Subscription sub = s.onRelease(name, () -> {});
    s.inspect(name);
    sub.close();
    s.close();
    s.close();
    assertThatThrownBy(() -> s.acquireOrRenew(name, a, ttl()))
        .isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.release(name, a)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.inspect(name)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.token(name)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.acquireOrRenewAll(List.of(name), a, ttl()))
        .isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.releaseAll(List.of(name), a))
        .isInstanceOf(LeaseStoreClosedException.class);
    assertThat(other.inspect(name).status()).as("other clients keep working")
        .isEqualTo(LeaseState.Status.HELD);
    await("the closed store's non-daemon threads end").pollInSameThread().atMost(Duration.ofSeconds(15))
        .untilAsserted(() -> assertThat(nonDaemonThreads())
            .filteredOn(t -> !before.contains(t.getId()))
            .as("non-daemon threads left by the closed store").isEmpty());
  }

  private static List<Thread> nonDaemonThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && !t.isDaemon())
        .collect(Collectors.toList());
  }

  @Test
  void clientClockSkewedByAnHourChangesNoOutcome() throws Exception {
    String name = leaseName();
    for (Duration skew : List.of(Duration.ofHours(1), Duration.ofHours(-1))) {
      String n = name + (skew.isNegative() ? "-minus" : "-plus");
      LeaderLoop ahead = LeaderLoop.builder(store(), n).ttl(ttl())
          .clock(LeaseClock.skewed(LeaseClock.system(), skew)).build();
      closeables.add(ahead);
      LeaderLoop behind = LeaderLoop.builder(store(), n).ttl(ttl())
          .clock(LeaseClock.skewed(LeaseClock.system(), skew.negated())).build();
      closeables.add(behind);
      ahead.start();
      long t = ahead.awaitLeadership(expiryWait());
      assertThat(t).as("skew %s: the skewed loop leads", skew).isPositive();
      behind.start();
      LeaseStore probe = store();
      LeaseState.Held first = (LeaseState.Held) probe.inspect(n);
      await("several renewals").atMost(expiryWait().multipliedBy(2))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> probe.inspect(n) instanceof LeaseState.Held h
              && h.expiresAt().isAfter(first.expiresAt().plus(ttl())));
      assertThat(ahead.currentToken()).as("skew %s: token constant over renewals", skew)
          .isEqualTo(t);
      assertThat(behind.currentToken()).as("skew %s: the contender never leads", skew).isZero();
      LeaseState.Held held = (LeaseState.Held) probe.inspect(n);
      assertThat(held.remaining()).isLessThanOrEqualTo(ttl().plusMillis(50));
      ahead.close();
      long t2 = behind.awaitLeadership(expiryWait());
      assertThat(t2).as("skew %s: handover after close", skew).isGreaterThan(t);
      behind.close();
    }
  }

  // ---------------------------------------------------------------- paused leaders, failover

  @Test
  void pausedLeaderInProcessIsFencedOut() throws Exception {
    String name = leaseName();
    ReferenceFencedResource<String> resource = new ReferenceFencedResource<>(name);
    FreezableStore frozen = new FreezableStore(store());
    List<String> events = new CopyOnWriteArrayList<>();
    LeaderLoop a = loop(frozen, name, new LeaderListener() {
      @Override
      public void lost(String n, long token, LossReason reason) {
        events.add("lost " + token);
      }
    });
    a.start();
    long ta = a.awaitLeadership(expiryWait());
    assertThat(ta).isPositive();
    long workerToken = a.currentToken();
    resource.write(workerToken, "a-before-pause");

    frozen.freeze();
    LeaderLoop b = loop(store(), name);
    b.start();
    long tb = b.awaitLeadership(expiryWait().plus(expiryWait()));
    assertThat(tb).as("b takes over while a is frozen").isGreaterThan(ta);
    assertThat(a.currentToken()).as("a stood down before b could take over").isZero();
    resource.write(tb, "b-1");

    frozen.thaw();
    assertThatThrownBy(() -> resource.write(workerToken, "a-after-pause"))
        .isInstanceOf(FencedOutException.class);
    assertThat(resource.acceptedWrites()).extracting(ReferenceFencedResource.Write::value)
        .containsExactly("a-before-pause", "b-1");
    await("a reports the loss").atMost(expiryWait()).until(() -> events.contains("lost " + ta));
    resource.write(tb, "b-2");
    assertThat(b.currentToken()).isEqualTo(tb);
  }

  @Test
  void pausedLeaderProcessStoppedWithSigstopIsFencedOut() throws Exception {
    String name = leaseName();
    ReferenceFencedResource<String> resource = new ReferenceFencedResource<>(name);
    Duration ttl = ttl();
    try (LeaderProcess child = LeaderProcess.start(storeRecipe(), name, ttl, ttl.dividedBy(3))) {
      closeables.add(child);
      String acquired = child.awaitLine("ACQUIRED ", 0, expiryWait().plusSeconds(20));
      long t1 = Long.parseLong(acquired.substring("ACQUIRED ".length()));
      long captured = child.ask("CAPTURE", "CAPTURED", Duration.ofSeconds(10));
      assertThat(captured).isEqualTo(t1);
      resource.write(captured, "child-before-stop");

      child.signal("STOP");
      LeaderLoop b = loop(store(), name);
      b.start();
      long tb = b.awaitLeadership(expiryWait().plus(expiryWait()));
      assertThat(tb).as("b takes over while the child is stopped").isGreaterThan(t1);
      resource.write(tb, "b-1");

      child.signal("CONT");
      long staleToken = child.ask("WRITE", "WRITE", Duration.ofSeconds(10));
      assertThat(staleToken).isEqualTo(t1);
      assertThatThrownBy(() -> resource.write(staleToken, "child-after-resume"))
          .isInstanceOf(FencedOutException.class)
          .hasMessageContaining(Long.toString(tb));
      child.awaitLine("LOST " + t1 + " ", 0, expiryWait());
      long now = child.ask("TOKEN", "TOKEN", Duration.ofSeconds(10));
      assertThat(now == 0 || now > tb).as("resumed child's token %d", now).isTrue();
      assertThat(resource.acceptedWrites()).extracting(ReferenceFencedResource.Write::value)
          .containsExactly("child-before-stop", "b-1");
      assertThat(b.currentToken()).isEqualTo(tb);
    }
  }

  @Test
  void revokedLeaderNeverWritesAgainUnderItsOldToken() throws Exception {
    String name = leaseName();
    ReferenceFencedResource<String> resource = new ReferenceFencedResource<>(name);
    List<String> events = new CopyOnWriteArrayList<>();
    LeaderLoop a = loop(store(), name, new LeaderListener() {
      @Override
      public void lost(String n, long token, LossReason reason) {
        events.add("lost " + token + " " + reason);
      }
    });
    a.start();
    long t1 = a.awaitLeadership(expiryWait());
    assertThat(t1).isPositive();
    resource.write(t1, "a-before-restore");
    HolderId oldId = a.holder();
    a.revoke();
    assertThat(a.currentToken()).as("a revoked loop has no token at once").isZero();
    assertThat(a.holder()).as("a revoked loop contends under a fresh id").isNotEqualTo(oldId);
    LeaderLoop b = loop(store(), name);
    b.start();
    long[] next = new long[1];
    await("a or b leads under a new tenure").atMost(expiryWait().multipliedBy(2))
        .pollInterval(Duration.ofMillis(10))
        .until(() -> (next[0] = Math.max(a.currentToken(), b.currentToken())) > t1);
    resource.write(next[0], "new-tenure");
    assertThatThrownBy(() -> resource.write(t1, "a-after-restore"))
        .as("a write under the revoked tenure's token").isInstanceOf(FencedOutException.class);
    LeaseState st = store().inspect(name);
    assertThat(st).isInstanceOf(LeaseState.Held.class);
    assertThat(((LeaseState.Held) st).holder()).as("the revoked id never renews again")
        .isNotEqualTo(oldId);
    await("a hears REVOKED").atMost(Duration.ofSeconds(10))
        .until(() -> events.contains("lost " + t1 + " REVOKED"));
  }

  @Test
  void followerTakesOverWithinTtlPlusOneRenewIntervalAfterSigkill() throws Exception {
    String name = leaseName();
    Duration ttl = ttl();
    Duration renew = ttl.dividedBy(3);
    try (LeaderProcess child = LeaderProcess.start(storeRecipe(), name, ttl, renew)) {
      closeables.add(child);
      String acquired = child.awaitLine("ACQUIRED ", 0, expiryWait().plusSeconds(20));
      long t1 = Long.parseLong(acquired.substring("ACQUIRED ".length()));
      CountingLeaseStore followerStore = new CountingLeaseStore(store());
      LeaderLoop follower = loop(followerStore, name);
      follower.start();
      await("the follower has read the lease's expiry").atMost(Duration.ofSeconds(10))
          .until(() -> followerStore.expiryReads() > 0);
      assertThat(follower.currentToken()).isZero();
      long killedAt = System.nanoTime();
      child.signal("KILL");
      long t2 = follower.awaitLeadership(expiryWait().plus(expiryWait()));
      Duration took = Duration.ofNanos(System.nanoTime() - killedAt);
      assertThat(t2).isGreaterThan(t1);
      assertThat(took).as("takeover after SIGKILL (ttl %s, renew %s, slack %s)", ttl, renew,
          expirySlack()).isLessThanOrEqualTo(ttl.plus(renew).plus(expirySlack()));
    }
  }

  @Test
  void followerTakesOverWithinOneSecondAfterCleanClose() throws Exception {
    String name = leaseName();
    LeaderLoop leader = loop(store(), name);
    leader.start();
    long t1 = leader.awaitLeadership(expiryWait());
    assertThat(t1).isPositive();
    AtomicInteger acquiredEvents = new AtomicInteger();
    ConcurrentLinkedQueue<Long> tokens = new ConcurrentLinkedQueue<>();
    CountingLeaseStore followerStore = new CountingLeaseStore(store());
    LeaderLoop follower = loop(followerStore, name, new LeaderListener() {
      @Override
      public void acquired(String n, long token) {
        acquiredEvents.incrementAndGet();
        tokens.add(token);
      }
    });
    follower.start();
    await("the follower has read the lease's expiry and gone to sleep")
        .atMost(Duration.ofSeconds(10)).until(() -> followerStore.expiryReads() > 0);
    assertThat(follower.currentToken()).isZero();
    long closedAt = System.nanoTime();
    leader.close();
    long t2 = follower.awaitLeadership(expiryWait());
    Duration took = Duration.ofNanos(System.nanoTime() - closedAt);
    assertThat(t2).isGreaterThan(t1);
    Duration limit = deliversReleaseHints() ? Duration.ofSeconds(1)
        : ttl().plus(ttl().dividedBy(3)).plus(expirySlack());
    assertThat(took).as("clean handover (release hints %s)",
        deliversReleaseHints() ? "declared" : "not declared").isLessThanOrEqualTo(limit);
    await("the follower's listener hears it").atMost(Duration.ofSeconds(5))
        .until(() -> acquiredEvents.get() >= 1);
    assertThat(acquiredEvents.get()).isEqualTo(1);
    assertThat(tokens).containsExactly(t2);
  }
}
