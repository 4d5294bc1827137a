package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One shared etcd lease per (store, holder, TTL): what it costs and what it shares. Requests are
 * counted by a gRPC interceptor on the store's client: one per unary call, one per keep-alive (each
 * {@code keepAliveOnce} is its own stream carrying one request).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EtcdSharedLeaseTest {

  /** Counts the gRPC calls a client starts, by method. */
  static final class CountingInterceptor implements ClientInterceptor {
    final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
        Channel next) {
      calls.computeIfAbsent(method.getBareMethodName(), k -> new AtomicLong()).incrementAndGet();
      return next.newCall(method, options);
    }

    long total() {
      return calls.values().stream().mapToLong(AtomicLong::get).sum();
    }

    Map<String, Long> snapshotAndReset() {
      Map<String, Long> m = new TreeMap<>();
      calls.forEach((k, v) -> m.put(k, v.getAndSet(0)));
      m.values().removeIf(v -> v == 0);
      return m;
    }
  }

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    closeables.clear();
  }

  private EtcdLeaseStore store() {
    EtcdLeaseStore s = EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(prefix).build();
    closeables.add(s);
    return s;
  }

  private EtcdLeaseStore countedStore(CountingInterceptor counter) {
    Client c = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new))
        .interceptor(new Calls.DeadlineInterceptor(Duration.ofSeconds(30)), counter)
        .waitForReady(false).build();
    closeables.add(c);
    EtcdLeaseStore s = EtcdLeaseStore.builder(c).keyPrefix(prefix)
        .callTimeout(Duration.ofSeconds(30)).build();
    closeables.add(s);
    return s;
  }

  private static List<String> names(int n) {
    String base = "n-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(base + "-" + i);
    }
    return out;
  }

  private static KeyValue key(String name) throws Exception {
    return admin.getKVClient().get(new KeyLayout(prefix).leaseKey(name)).get(10, TimeUnit.SECONDS)
        .getKvs().stream().findFirst().orElse(null);
  }

  private static Map<String, Long> tokens(Map<String, AcquireResult> r) {
    Map<String, Long> t = new LinkedHashMap<>();
    r.forEach((n, a) -> t.put(n, a.grant().orElseThrow(
        () -> new AssertionError("'" + n + "' was refused: " + a)).token()));
    return t;
  }

  @Test
  void aBatchOfHundredNamesIsOnOneEtcdLease() throws Exception {
    EtcdLeaseStore s = store();
    HolderId a = HolderId.generate();
    List<String> names = names(100);
    tokens(s.acquireOrRenewAll(names, a, Duration.ofSeconds(10)));
    Set<Long> leases = new HashSet<>();
    for (String n : names) {
      leases.add(key(n).getLease());
    }
    assertThat(leases).as("the etcd leases of 100 names granted in one batch").hasSize(1);
    LeaseTimeToLiveResponse t = admin.getLeaseClient().timeToLive(leases.iterator().next(),
        LeaseOption.builder().withAttachedKeys().build()).get(10, TimeUnit.SECONDS);
    KeyLayout layout = new KeyLayout(prefix);
    assertThat(t.getKeys()).as("the keys etcd reports on that lease")
        .containsAll(names.stream().map(layout::leaseKey).toList());
    String single = names(1).get(0);
    s.acquireOrRenew(single, a, Duration.ofSeconds(10)).orElseThrow();
    assertThat(key(single).getLease()).as("a later single acquire of the holder joins it")
        .isEqualTo(leases.iterator().next());
  }

  @Test
  void renewalRoundsOfTenThousandNamesCostABoundedNumberOfRequests() {
    CountingInterceptor counter = new CountingInterceptor();
    EtcdLeaseStore s = countedStore(counter);
    HolderId a = HolderId.generate();
    List<String> names = names(LeaseStore.MAX_BATCH_SIZE);
    Duration ttl = Duration.ofSeconds(60);
    counter.snapshotAndReset();
    long t0 = System.nanoTime();
    Map<String, Long> first = tokens(s.acquireOrRenewAll(names, a, ttl));
    long acquireMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    Map<String, Long> acquireCalls = counter.snapshotAndReset();
    t0 = System.nanoTime();
    Map<String, Long> again = tokens(s.acquireOrRenewAll(names, a, ttl));
    long renewMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    Map<String, Long> renewCalls = counter.snapshotAndReset();
    assertThat(again).as("a renewal round keeps every token").isEqualTo(first);
    t0 = System.nanoTime();
    assertThat(s.releaseAll(names, a).values()).containsOnly(true);
    long releaseMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    Map<String, Long> releaseCalls = counter.snapshotAndReset();
    System.out.printf("10,000 names: acquire %s in %d ms; renew %s in %d ms; release %s in %d ms%n",
        acquireCalls, acquireMs, renewCalls, renewMs, releaseCalls, releaseMs);
    long renewTotal = renewCalls.values().stream().mapToLong(Long::longValue).sum();
    assertThat(renewCalls.getOrDefault("LeaseKeepAlive", 0L)).as("keep-alives per renewal round")
        .isEqualTo(1);
    assertThat(renewTotal).as("requests of one renewal round of 10,000 names: one keep-alive and"
        + " a few pages of one range read, %s", renewCalls).isLessThanOrEqualTo(6);
    long acquireTotal = acquireCalls.values().stream().mapToLong(Long::longValue).sum();
    assertThat(acquireTotal).as("requests of acquiring 10,000 free names: %s", acquireCalls)
        .isLessThanOrEqualTo(6 + (LeaseStore.MAX_BATCH_SIZE + EtcdLeaseStore.ACQUIRE_PER_TXN - 1)
            / EtcdLeaseStore.ACQUIRE_PER_TXN);
  }

  @Test
  void revokingTheSharedLeaseLosesEveryNameAtOnceAndTheNextGrantsAreLarger() throws Exception {
    EtcdLeaseStore s = store();
    EtcdLeaseStore observer = store();
    HolderId a = HolderId.generate();
    List<String> names = names(300);
    Map<String, Long> first = tokens(s.acquireOrRenewAll(names, a, Duration.ofSeconds(30)));
    long lease = key(names.get(0)).getLease();
    admin.getLeaseClient().revoke(lease).get(10, TimeUnit.SECONDS);
    for (String n : names) {
      assertThat(observer.inspect(n).status()).as("'%s' right after its shared lease was revoked", n)
          .isNotEqualTo(LeaseState.Status.HELD);
    }
    Map<String, Long> next = tokens(s.acquireOrRenewAll(names, a, Duration.ofSeconds(30)));
    for (String n : names) {
      assertThat(next.get(n)).as("'%s' after its shared lease was lost: a new tenure", n)
          .isGreaterThan(first.get(n));
    }
    assertThat(key(names.get(0)).getLease()).as("on a new shared lease").isNotEqualTo(lease);
  }

  /**
   * The rule for a new name on a shared lease granted long ago: its expiry is measured from a
   * keep-alive sent in its own acquire, so it gets the full TTL, and etcd's own count for the lease
   * is reset by that keep-alive; never the remainder of an earlier keep-alive reported as the TTL.
   */
  @Test
  void aNewNameOnAnOldSharedLeaseGetsItsTtlFromAKeepAliveSentWithTheAcquire() throws Exception {
    EtcdLeaseStore s = store();
    HolderId a = HolderId.generate();
    List<String> two = names(2);
    Duration ttl = Duration.ofSeconds(6);
    long lease = leaseOfGrant(s, two.get(0), a, ttl);
    awaitRunDown("the shared lease runs down on etcd", lease, 3);
    Instant sent = Instant.now();
    LeaseGrant g = s.acquireOrRenew(two.get(1), a, ttl).orElseThrow();
    assertThat(key(two.get(1)).getLease()).as("the new name joins the holder's shared lease")
        .isEqualTo(lease);
    assertThat(g.ttl()).isEqualTo(ttl);
    assertThat(g.expiresAt()).isBeforeOrEqualTo(sent.plus(ttl).plusMillis(50));
    assertThat(admin.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(5, TimeUnit.SECONDS)
        .getTTL()).as("etcd's remaining TTL right after the acquire: a keep-alive sent with it"
            + " reset the shared lease").isGreaterThanOrEqualTo(4);
  }

  /**
   * After the holder's last release its shared lease lingers, unkept: the holder's next fresh
   * acquire is one transaction on it (and a keep-alive sent in parallel), no read and no grant.
   * Meanwhile the released name is FREE and its key gone; closing the store revokes the lease.
   */
  @Test
  void aFreshAcquireAfterTheLastReleaseIsOneTransactionOnTheLingeringLease() throws Exception {
    CountingInterceptor counter = new CountingInterceptor();
    EtcdLeaseStore s = countedStore(counter);
    EtcdLeaseStore observer = store();
    HolderId a = HolderId.generate();
    List<String> two = names(2);
    Duration ttl = Duration.ofSeconds(30);
    long lease = leaseOfGrant(s, two.get(0), a, ttl);
    assertThat(s.release(two.get(0), a)).isTrue();
    assertThat(observer.inspect(two.get(0)).status()).as("released while its lease lingers")
        .isEqualTo(LeaseState.Status.FREE);
    assertThat(key(two.get(0))).as("the released name's key").isNull();
    assertThat(remainingOnServer(lease)).as("the lingering shared lease").isPositive();
    counter.snapshotAndReset();

    LeaseGrant g = s.acquireOrRenew(two.get(1), a, ttl).orElseThrow();

    assertThat(counter.snapshotAndReset()).as("requests of a fresh acquire after the last release")
        .isEqualTo(Map.of("Txn", 1L, "LeaseKeepAlive", 1L));
    assertThat(key(two.get(1)).getLease()).as("on the lingering lease").isEqualTo(lease);
    assertThat(g.ttl()).isEqualTo(ttl);
    assertThat(s.release(two.get(1), a)).isTrue();
    s.close();
    await("closing the store revokes the lingering lease").atMost(Duration.ofSeconds(10))
        .until(() -> remainingOnServer(lease) == -1);
  }

  /**
   * A lingering lease is reused only while at least half its TTL is left by its last keep-alive:
   * after that the next acquire gets a new shared lease (with the full TTL) and the old one is
   * revoked, or expires.
   */
  @Test
  void aLingeringLeasePastHalfItsTtlIsReplaced() throws Exception {
    EtcdLeaseStore s = store();
    HolderId a = HolderId.generate();
    List<String> two = names(2);
    Duration ttl = Duration.ofSeconds(4);
    long lease = leaseOfGrant(s, two.get(0), a, ttl);
    assertThat(s.release(two.get(0), a)).isTrue();
    awaitRunDown("the lingering lease runs down past half its TTL", lease, 1);

    LeaseGrant g = s.acquireOrRenew(two.get(1), a, ttl).orElseThrow();

    long now = key(two.get(1)).getLease();
    assertThat(now).as("a new shared lease").isNotEqualTo(lease);
    assertThat(g.ttl()).isEqualTo(ttl);
    assertThat(remainingOnServer(now)).isGreaterThanOrEqualTo(2);
    await("the old lease is gone").atMost(Duration.ofSeconds(10))
        .until(() -> remainingOnServer(lease) == -1);
  }

  /** Acquires {@code name}; the etcd lease its key is on. */
  private static long leaseOfGrant(EtcdLeaseStore s, String name, HolderId a, Duration ttl)
      throws Exception {
    s.acquireOrRenew(name, a, ttl).orElseThrow();
    return key(name).getLease();
  }

  /** Waits until etcd reports at most {@code seconds} left of {@code lease}. */
  private static void awaitRunDown(String why, long lease, long seconds) {
    await(why).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
        .until(() -> remainingOnServer(lease) <= seconds);
  }

  /** etcd's remaining TTL of {@code lease} in seconds, -1 once it is gone. */
  private static long remainingOnServer(long lease) throws Exception {
    return admin.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(5, TimeUnit.SECONDS)
        .getTTL();
  }

  /** Concurrent renewals of one holder's names share keep-alives (one in flight, one queued). */
  @Test
  void concurrentRenewalsOfOneHolderShareKeepAlives() throws Exception {
    CountingInterceptor counter = new CountingInterceptor();
    EtcdLeaseStore s = countedStore(counter);
    HolderId a = HolderId.generate();
    List<String> names = names(16);
    Duration ttl = Duration.ofSeconds(30);
    tokens(s.acquireOrRenewAll(names, a, ttl));
    counter.snapshotAndReset();
    int rounds = 20;
    ExecutorService pool = Executors.newFixedThreadPool(names.size());
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (String n : names) {
        fs.add(pool.submit(() -> {
          for (int i = 0; i < rounds; i++) {
            s.acquireOrRenew(n, a, ttl).orElseThrow();
          }
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    Map<String, Long> used = counter.snapshotAndReset();
    System.out.printf("%d concurrent renewals: %s%n", names.size() * rounds, used);
    assertThat(used.get("LeaseKeepAlive")).as("keep-alives for %d renewals", names.size() * rounds)
        .isLessThan((long) names.size() * rounds);
  }

  private static Client admin;
  private static String prefix;

  @BeforeAll
  static void connect() {
    admin = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "shared-" + HexFormat.of().formatHex(b);
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }

  /**
   * Not asserted (timing on a shared machine): p50 of 500 calls each of a plain etcd put, an
   * acquire of a fresh name and a renewal, and how many requests each call made.
   */
  @Test
  void singleCallsCostAboutAPut() throws Exception {
    int n = 500;
    CountingInterceptor counter = new CountingInterceptor();
    EtcdLeaseStore s = countedStore(counter);
    Client c = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
    closeables.add(c);
    HolderId a = HolderId.generate();
    Duration ttl = Duration.ofSeconds(30);
    String base = names(1).get(0);
    s.acquireOrRenew(base + "-warm", a, ttl).orElseThrow();
    for (int i = 0; i < 50; i++) {
      c.getKVClient().put(utf8(prefix + "-data/warm"), utf8("x")).get(10, TimeUnit.SECONDS);
      s.acquireOrRenew(base + "-warm", a, ttl).orElseThrow();
      s.acquireOrRenew(base + "-warm-" + i, a, ttl).orElseThrow();
    }
    int[] i = {0};
    long put = p50(n, () -> time(() -> c.getKVClient().put(utf8(prefix + "-data/k" + i[0]++),
        utf8("value")).get(10, TimeUnit.SECONDS)));
    counter.snapshotAndReset();
    long acquire = p50(n, () -> time(() -> s.acquireOrRenew(base + "-" + i[0]++, a, ttl)
        .orElseThrow()));
    Map<String, Long> acquireCalls = counter.snapshotAndReset();
    long renew = p50(n, () -> time(() -> s.acquireOrRenew(base + "-warm", a, ttl).orElseThrow()));
    Map<String, Long> renewCalls = counter.snapshotAndReset();
    System.out.printf("single calls, p50 of %d: put %.2f ms, acquire %.2f ms (%.2fx put) %s,"
            + " renew %.2f ms (%.2fx put) %s%n", n, put / 1e6, acquire / 1e6, (double) acquire / put,
        acquireCalls, renew / 1e6, (double) renew / put, renewCalls);
  }

  private interface Body {
    void run() throws Exception;
  }

  private static long time(Body b) {
    long t0 = System.nanoTime();
    try {
      b.run();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    return System.nanoTime() - t0;
  }

  private static long p50(int n, LongSupplier sample) {
    List<Long> xs = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      xs.add(sample.getAsLong());
    }
    xs.sort(null);
    return xs.get(n / 2);
  }

  private static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
