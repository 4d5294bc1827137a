package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.leader.LeaderLoop;
import dev.leases.tck.CountingLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The native batch calls of {@link RedisLeaseStore}: the single call's outcomes, refusals that say
 * who holds a name until when, one round trip for 10,000 names, a foreign key that refuses its
 * name alone.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisBatchTest {

  private static final Duration TTL = Duration.ofSeconds(5);

  private static RedisAdmin admin;
  private static RedisLeaseStore store;
  private static RedisLeaseStore other;

  @BeforeAll
  static void open() {
    String uri = RedisServers.sharedUri();
    admin = RedisAdmin.connect(uri);
    store = RedisLeaseStore.builder(uri).build();
    other = RedisLeaseStore.builder(uri).build();
  }

  @AfterAll
  static void close() {
    store.close();
    other.close();
    admin.close();
  }

  private static String name() {
    return "batch-" + UUID.randomUUID();
  }

  private static List<String> names(int count) {
    String base = name();
    List<String> names = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      names.add(base + "-" + i);
    }
    return names;
  }

  @Test
  void mixedNamesGetTheSingleCallsOutcomesAndRefusalsSayWhoHoldsThemUntilWhen() {
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    String free = name();
    String held = name();
    String expired = name();
    String own = name();
    String released = name();
    long freeBound = store.token(free).orElseThrow();
    LeaseGrant gExpired = other.acquireOrRenew(expired, b, Duration.ofMillis(200)).orElseThrow();
    await().atMost(Duration.ofSeconds(10))
        .until(() -> store.inspect(expired).status() == LeaseState.Status.EXPIRED);
    LeaseGrant gHeld = other.acquireOrRenew(held, b, TTL).orElseThrow();
    LeaseGrant gOwn = store.acquireOrRenew(own, a, TTL).orElseThrow();
    LeaseGrant gReleased = other.acquireOrRenew(released, b, TTL).orElseThrow();
    assertThat(other.release(released, b)).isTrue();

    long before = admin.serverTimeMillis();
    Map<String, AcquireResult> r =
        store.acquireOrRenewAll(List.of(free, held, expired, own, released), a, TTL);
    long after = admin.serverTimeMillis();
    assertThat(r.keySet()).containsExactly(free, held, expired, own, released);
    assertThat(granted(r, free).token()).isGreaterThan(freeBound);
    assertThat(granted(r, expired).token()).isGreaterThan(gExpired.token());
    assertThat(granted(r, own).token()).as("a renewal keeps the token").isEqualTo(gOwn.token());
    assertThat(granted(r, released).token()).isGreaterThan(gReleased.token());
    for (String n : List.of(free, expired, own, released)) {
      LeaseGrant g = granted(r, n);
      assertThat(g.holder()).isEqualTo(a);
      assertThat(g.ttl()).isEqualTo(TTL);
      assertThat(g.expiresAt().toEpochMilli()).as("expiry by the server's clock")
          .isBetween(before + TTL.toMillis(), after + TTL.toMillis());
      LeaseState.Held st = (LeaseState.Held) other.inspect(n);
      assertThat(st.holder()).isEqualTo(a);
      assertThat(st.lastToken()).isEqualTo(g.token());
      assertThat(st.expiresAt()).isBetween(g.expiresAt().minusMillis(50), g.expiresAt());
    }
    LeaseState.Held holder = heldBy(r, held);
    assertThat(holder.holder()).isEqualTo(b);
    assertThat(holder.lastToken()).isEqualTo(gHeld.token());
    assertThat(holder.expiresAt()).as("the holder's expiry as the server set it")
        .isBetween(gHeld.expiresAt().minusMillis(50), gHeld.expiresAt());
    assertThat(holder.remaining()).isPositive().isLessThanOrEqualTo(TTL);
    assertThat(holder.expiresAt().toEpochMilli()).as("within the holder's TTL from the batch")
        .isBetween(before, after + TTL.toMillis());
    assertThat(((LeaseState.Held) other.inspect(held)).lastToken()).as("untouched")
        .isEqualTo(gHeld.token());
    assertThat(store.releaseAll(List.of(free, held, expired, own, released), a))
        .containsExactly(Map.entry(free, true), Map.entry(held, false), Map.entry(expired, true),
            Map.entry(own, true), Map.entry(released, true));
  }

  /**
   * A key of the wrong type among the names refuses that name alone (heldBy empty) with nothing of
   * it written, in whichever of the batch's scripts it falls; the other names get their outcomes.
   * The single call keeps throwing.
   */
  @Test
  void aKeyOfTheWrongTypeRefusesItsNameAloneAndWritesNothingOfIt() {
    HolderId a = HolderId.generate();
    List<String> names = names(2500); // three scripts; the bad ones in the second and the third
    String newGrant = names.get(1234);
    String renewal = names.get(2345);
    List<String> nk = store.keysOf(newGrant);
    admin.sync().rpush(nk.get(2), "written by someone else");
    long t = store.acquireOrRenew(renewal, a, TTL).orElseThrow().token();
    List<String> rk = store.keysOf(renewal);
    admin.sync().pexpire(rk.get(0), 600_000);
    admin.sync().del(rk.get(2));
    admin.sync().set(rk.get(2), "written by someone else");

    Map<String, AcquireResult> r = store.acquireOrRenewAll(names, a, TTL);
    assertThat(r.get(newGrant)).isEqualTo(AcquireResult.Refused.unexplained(newGrant));
    assertThat(r.get(renewal)).isEqualTo(AcquireResult.Refused.unexplained(renewal));
    assertThat(admin.sync().exists(nk.get(0), nk.get(1))).as("no lease, no token drawn").isZero();
    assertThat(admin.sync().lrange(nk.get(2), 0, -1)).containsExactly("written by someone else");
    assertThat(admin.sync().pttl(rk.get(0))).as("not extended").isGreaterThan(300_000L);
    assertThat(admin.sync().hget(rk.get(0), "token")).isEqualTo(Long.toString(t));
    assertThat(admin.sync().get(rk.get(2))).isEqualTo("written by someone else");
    for (String n : names) {
      if (!n.equals(newGrant) && !n.equals(renewal)) {
        assertThat(r.get(n)).as(n).isInstanceOf(AcquireResult.Granted.class);
      }
    }
    assertThatThrownBy(() -> store.acquireOrRenew(newGrant, a, TTL))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(nk.get(2))
        .hasMessageContaining("list");

    Map<String, Boolean> gone = store.releaseAll(names, a);
    assertThat(gone.get(newGrant)).isFalse();
    assertThat(gone.get(renewal)).isFalse();
    assertThat(admin.sync().hget(rk.get(0), "holder")).as("not released").isEqualTo(a.value());
    assertThat(gone.values().stream().filter(x -> x)).hasSize(names.size() - 2);
    assertThatThrownBy(() -> store.release(renewal, a)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(rk.get(2));
  }

  /**
   * Round trips, counted on the wire: the store runs on a client whose connection reads nothing
   * (Netty's auto-read off), so it can receive no reply at all. The server still runs every script
   * of the batch (its {@code INFO commandstats} counts them), which it can only do if the client
   * sent them all without waiting for any answer: one round trip. A store that awaited each
   * script's reply before sending the next would leave the count at one script, and the wait fails.
   * Then reading is turned back on and the batch's answers arrive.
   */
  @Test
  void tenThousandNamesCostOneRoundTripToAcquireRenewAndRelease() throws Exception {
    List<Channel> channels = new CopyOnWriteArrayList<>();
    ClientResources resources = ClientResources.builder().nettyCustomizer(new NettyCustomizer() {
      @Override
      public void afterChannelInitialized(Channel channel) {
        channels.add(channel);
      }
    }).build();
    RedisClient client = RedisClient.create(resources);
    RedisURI uri = RedisURI.builder(RedisURI.create(RedisServers.sharedUri()))
        .withTimeout(Duration.ofSeconds(60)).build();
    StatefulRedisPubSubConnection<String, String> sub = client.connectPubSub(uri);
    try (RedisLeaseStore s = RedisLeaseStore.builder(client, uri)
        .commandTimeout(Duration.ofSeconds(60)).build()) {
      AtomicInteger hints = new AtomicInteger();
      sub.addListener(new RedisPubSubAdapter<>() {
        @Override
        public void message(String channel, String message) {
          hints.incrementAndGet();
        }
      });
      sub.sync().subscribe(s.releaseChannel());
      HolderId a = HolderId.generate();
      // loads both scripts (NOSCRIPT, then EVAL) and opens the store's connection
      s.acquireOrRenewAll(List.of(name()), a, TTL);
      s.releaseAll(List.of(name()), a);
      await().until(() -> channels.size() == 2); // the subscriber's and the store's
      Channel storeChannel = channels.get(1);
      hints.set(0);

      List<String> names = names(10_000);
      int scripts = 10_000 / KeyLayout.MAX_NAMES_PER_SCRIPT;
      Map<String, AcquireResult> acquired = oneRoundTrip(storeChannel, scripts,
          () -> s.acquireOrRenewAll(names, a, TTL));
      assertThat(acquired.keySet()).containsExactlyElementsOf(names);
      assertThat(acquired.values()).allMatch(x -> x instanceof AcquireResult.Granted);
      Map<String, AcquireResult> renewed = oneRoundTrip(storeChannel, scripts,
          () -> s.acquireOrRenewAll(names, a, TTL));
      for (String n : names) {
        assertThat(renewed.get(n).grant().orElseThrow().token())
            .isEqualTo(acquired.get(n).grant().orElseThrow().token());
      }
      Map<String, AcquireResult> refused = oneRoundTrip(storeChannel, scripts,
          () -> s.acquireOrRenewAll(names, HolderId.generate(), TTL));
      for (String n : names) {
        assertThat(heldBy(refused, n).holder()).isEqualTo(a);
      }
      Map<String, Boolean> released = oneRoundTrip(storeChannel, scripts,
          () -> s.releaseAll(names, a));
      assertThat(released.values()).containsOnly(true);
      await("a release hint per released name").atMost(Duration.ofSeconds(30))
          .until(() -> hints.get() == names.size());

      List<String> timed = names(10_000);
      long t0 = System.nanoTime();
      s.acquireOrRenewAll(timed, a, TTL);
      long t1 = System.nanoTime();
      s.acquireOrRenewAll(timed, a, TTL);
      long t2 = System.nanoTime();
      s.releaseAll(timed, a);
      long t3 = System.nanoTime();
      System.out.printf("10,000-name batches, 1 round trip and %d scripts each: acquire %d ms,"
          + " renew %d ms, release %d ms%n", scripts, (t1 - t0) / 1_000_000,
          (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000);
    } finally {
      sub.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
  }

  /** Runs {@code batch} with the store's connection deaf, checking it sends all its scripts. */
  private static <T> T oneRoundTrip(Channel storeChannel, int scripts, Supplier<T> batch)
      throws Exception {
    long before = admin.scriptCalls();
    storeChannel.config().setAutoRead(false);
    CompletableFuture<T> answer;
    try {
      answer = CompletableFuture.supplyAsync(batch);
      await("the server runs all %d scripts while the client reads no reply".formatted(scripts))
          .atMost(Duration.ofSeconds(50)).until(() -> admin.scriptCalls() - before >= scripts);
      assertThat(answer).as("no answer could be read yet").isNotDone();
    } finally {
      storeChannel.config().setAutoRead(true);
    }
    T result = answer.get(60, TimeUnit.SECONDS);
    assertThat(admin.scriptCalls() - before).as("scripts run for the batch").isEqualTo(scripts);
    return result;
  }

  /** A follower learns until when the lease is held from the refusal itself: no inspect. */
  @Test
  void aFollowersWakeCostsOneRoundTripWithNoInspect() {
    String n = name();
    other.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(30)).orElseThrow();
    CountingLeaseStore counted = new CountingLeaseStore(store);
    try (LeaderLoop follower = LeaderLoop.builder(counted, n).ttl(Duration.ofSeconds(3)).start()) {
      await("the follower learned the expiry").atMost(Duration.ofSeconds(10))
          .until(() -> counted.expiryReads() > 0);
      assertThat(counted.inspects()).as("the refusal said until when").isZero();
      assertThat(follower.currentToken()).isZero();
    }
  }

  /**
   * What one acquire-or-renew costs next to the cheapest write Redis has, in the same run on the
   * same server: printed for the record, not asserted (timings on a shared machine are noise).
   */
  @Test
  void singleCallLatencyNextToAPlainSet() {
    String n = name();
    HolderId a = HolderId.generate();
    Duration ttl = Duration.ofSeconds(30);
    int calls = 500;
    long[] renew = new long[calls];
    long[] set = new long[calls];
    long[] server = new long[2];
    for (int round = 0; round < 2; round++) { // the first round warms up the JIT
      server = evalshaCallsAndMicros();
      for (int i = 0; i < calls; i++) {
        long t0 = System.nanoTime();
        assertThat(store.acquireOrRenew(n, a, ttl)).isPresent();
        renew[i] = System.nanoTime() - t0;
        t0 = System.nanoTime();
        admin.sync().set("latency-plain-" + n, "v");
        set[i] = System.nanoTime() - t0;
      }
    }
    long[] end = evalshaCallsAndMicros();
    System.out.printf("single-call p50 over %d calls: acquireOrRenew %.1f us, plain SET %.1f us"
        + " (the script's own time in the server: %.1f us a call)%n", calls, p50(renew) / 1e3,
        p50(set) / 1e3, (end[1] - server[1]) / (double) (end[0] - server[0]));
  }

  /** {@code INFO commandstats}: EVALSHA's calls and the server's total time in them. */
  private static long[] evalshaCallsAndMicros() {
    for (String line : admin.sync().info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_evalsha:")) {
        return new long[] {field(line, "calls"), field(line, "usec")};
      }
    }
    return new long[2];
  }

  private static long field(String line, String key) {
    String v = line.substring(line.indexOf(key + "=") + key.length() + 1);
    return Long.parseLong(v.substring(0, v.indexOf(',')));
  }

  private static long p50(long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static LeaseGrant granted(Map<String, AcquireResult> r, String n) {
    assertThat(r.get(n)).as(n).isInstanceOf(AcquireResult.Granted.class);
    return r.get(n).grant().orElseThrow();
  }

  private static LeaseState.Held heldBy(Map<String, AcquireResult> r, String n) {
    assertThat(r.get(n)).as(n).isInstanceOf(AcquireResult.Refused.class);
    return ((AcquireResult.Refused) r.get(n)).heldBy().orElseThrow(() -> new AssertionError(
        "the refusal of '" + n + "' must say who holds it (read in the same script)"));
  }
}
