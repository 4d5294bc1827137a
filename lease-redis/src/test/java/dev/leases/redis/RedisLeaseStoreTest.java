package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreClosedException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The reference semantics ({@code InMemoryLeaseStore}) on a real Redis, plus Redis-specific faults. */
class RedisLeaseStoreTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration SHORT_TTL = Duration.ofSeconds(1);

  private static RedisLeaseStore store;
  private static RedisLeaseStore other;
  private static RedisAdmin admin;

  @BeforeAll
  static void open() {
    String uri = RedisServers.sharedUri();
    store = RedisLeaseStore.builder(uri).build();
    other = RedisLeaseStore.builder(uri).build();
    admin = RedisAdmin.connect(uri);
  }

  @AfterAll
  static void close() {
    store.close();
    other.close();
    admin.close();
  }

  private static String name() {
    return "test-" + UUID.randomUUID();
  }

  @Test
  void renewalBySameHolderKeepsTokenAndOthersAreRefused() {
    String n = name();
    HolderId a = HolderId.generate();
    LeaseGrant g1 = store.acquireOrRenew(n, a, TTL).orElseThrow();
    LeaseGrant g2 = other.acquireOrRenew(n, a, TTL).orElseThrow();
    assertThat(g2.token()).isEqualTo(g1.token());
    assertThat(g2.expiresAt()).isAfterOrEqualTo(g1.expiresAt());
    assertThat(g1.ttl()).isEqualTo(TTL);
    assertThat(other.acquireOrRenew(n, HolderId.generate(), TTL)).isEmpty();
    assertThat(store.token(n)).hasValue(g1.token());
  }

  @Test
  void releaseFreesTheLeaseKeepsTheTokenAndTheNextGrantIsLarger() {
    String n = name();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    long t1 = store.acquireOrRenew(n, a, TTL).orElseThrow().token();
    assertThat(store.release(n, b)).as("release by a non-holder").isFalse();
    assertThat(store.release(n, a)).isTrue();
    assertThat(store.release(n, a)).as("second release").isFalse();
    assertThat(store.inspect(n)).isEqualTo(new LeaseState.Free(n, t1));
    assertThat(store.token(n)).hasValue(t1);
    long t2 = other.acquireOrRenew(n, b, TTL).orElseThrow().token();
    assertThat(t2).isGreaterThan(t1);
    long t3 = store.acquireOrRenew(n, b, TTL).orElseThrow().token();
    assertThat(t3).isEqualTo(t2);
  }

  /**
   * Nothing recorded: the bound is the server's clock (ms minus one), since every token is
   * clamped up to it; the first grant is above it.
   */
  @Test
  void neverGrantedIsFreeWithTheServersClockAsItsBound() {
    String n = name();
    long before = System.currentTimeMillis();
    LeaseState st = store.inspect(n);
    assertThat(st).isInstanceOf(LeaseState.Free.class);
    long bound = store.token(n).orElseThrow();
    // the server runs on this machine: same clock, give or take a few seconds of scheduling
    assertThat(st.lastToken()).isBetween(before - 5_000, System.currentTimeMillis() + 5_000);
    assertThat(bound).isGreaterThanOrEqualTo(st.lastToken());
    assertThat(store.release(n, HolderId.generate())).isFalse();
    assertThat(store.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token())
        .isGreaterThan(bound);
  }

  @Test
  void heldThenExpiredButNotTakenThenSameHolderGetsABumpedToken() {
    String n = name();
    HolderId a = HolderId.generate();
    LeaseGrant g = store.acquireOrRenew(n, a, SHORT_TTL).orElseThrow();
    LeaseState held = other.inspect(n);
    assertThat(held).isInstanceOfSatisfying(LeaseState.Held.class, h -> {
      assertThat(h.holder()).isEqualTo(a);
      assertThat(h.lastToken()).isEqualTo(g.token());
      assertThat(h.remaining()).isPositive().isLessThanOrEqualTo(SHORT_TTL);
      assertThat(Duration.between(h.expiresAt(), g.expiresAt()).abs())
          .isLessThanOrEqualTo(Duration.ofMillis(5));
    });
    await().atMost(Duration.ofSeconds(10)).until(() -> other.inspect(n).status(),
        s -> s == LeaseState.Status.EXPIRED);
    LeaseState expired = other.inspect(n);
    assertThat(expired).isEqualTo(new LeaseState.Expired(n, a, g.token(), g.expiresAt()));
    assertThat(store.release(n, a)).as("release after own expiry").isFalse();
    LeaseGrant again = store.acquireOrRenew(n, a, TTL).orElseThrow();
    assertThat(again.token()).isGreaterThan(g.token());
  }

  @Test
  void renewalCanShortenAndExtend() {
    String n = name();
    HolderId a = HolderId.generate();
    LeaseGrant longOne = store.acquireOrRenew(n, a, Duration.ofSeconds(30)).orElseThrow();
    LeaseGrant shortOne = store.acquireOrRenew(n, a, Duration.ofMillis(1500)).orElseThrow();
    assertThat(shortOne.token()).isEqualTo(longOne.token());
    assertThat(shortOne.expiresAt()).isBefore(longOne.expiresAt());
    assertThat(((LeaseState.Held) store.inspect(n)).remaining())
        .isLessThanOrEqualTo(Duration.ofMillis(1500));
  }

  @Test
  void ttlIsRoundedUpToWholeMillisecondsAndRangeIsChecked() {
    String n = name();
    LeaseGrant g = store.acquireOrRenew(n, HolderId.generate(), Duration.ofNanos(1_500_000_001L))
        .orElseThrow();
    assertThat(g.ttl()).isEqualTo(Duration.ofMillis(1501));
    assertThatThrownBy(() -> store.acquireOrRenew(n, HolderId.generate(), Duration.ofDays(366)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("range");
    assertThatThrownBy(() -> store.acquireOrRenew(n, HolderId.generate(), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void outOfBandDeleteOfTheLeaseKeyStillGivesALargerToken() {
    String n = name();
    List<String> keys = store.keysOf(n);
    long t1 = store.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token();
    assertThat(admin.sync().del(keys.get(0))).isEqualTo(1);
    assertThat(store.inspect(n)).isEqualTo(new LeaseState.Free(n, t1));
    long t2 = other.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token();
    assertThat(t2).isGreaterThan(t1);
  }

  @Test
  void outOfBandDeleteDoesNotTurnIntoExpiredLater() {
    String n = name();
    HolderId a = HolderId.generate();
    long expiresAtMs = store.acquireOrRenew(n, a, Duration.ofMillis(300)).orElseThrow()
        .expiresAt().toEpochMilli();
    admin.sync().del(store.keysOf(n).get(0));
    assertThat(store.inspect(n).status()).isEqualTo(LeaseState.Status.FREE);
    await("the deleted lease's expiry passes on the server").atMost(Duration.ofSeconds(5))
        .until(admin::serverTimeMillis, now -> now > expiresAtMs);
    assertThat(store.inspect(n).status()).isEqualTo(LeaseState.Status.FREE);
  }

  @Test
  void deletingEveryKeyOfTheNameStillGivesALargerTokenThanksToTheTimeClamp() {
    String n = name();
    long t1 = store.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token();
    assertThat(admin.sync().del(store.keysOf(n).toArray(String[]::new))).isEqualTo(3);
    // the clamp promises tokens above every earlier one once the server's clock has passed them
    await().atMost(Duration.ofSeconds(5)).until(admin::serverTimeMillis, now -> now > t1);
    long t2 = other.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token();
    assertThat(t2).isGreaterThan(t1);
  }

  @Test
  void tokensAreClampedToServerTime() {
    String n = name();
    long before = admin.serverTimeMillis();
    long t = store.acquireOrRenew(n, HolderId.generate(), TTL).orElseThrow().token();
    long after = admin.serverTimeMillis();
    assertThat(t).isBetween(before, after + 1);
  }

  @Test
  void scriptFlushMidRunIsRecoveredTransparently() {
    String n = name();
    HolderId a = HolderId.generate();
    long t1 = store.acquireOrRenew(n, a, TTL).orElseThrow().token();
    assertThat(admin.sync().scriptFlush()).isEqualTo("OK");
    assertThat(admin.sync().scriptExists(LuaScript.sha1Hex(scriptBody()))).containsExactly(false);
    assertThat(store.acquireOrRenew(n, a, TTL).orElseThrow().token()).isEqualTo(t1);
    assertThat(admin.sync().scriptExists(LuaScript.sha1Hex(scriptBody()))).containsExactly(true);
    admin.sync().scriptFlush();
    assertThat(store.inspect(n).status()).isEqualTo(LeaseState.Status.HELD);
    admin.sync().scriptFlush();
    assertThat(store.token(n)).hasValue(t1);
    admin.sync().scriptFlush();
    assertThat(store.release(n, a)).isTrue();
  }

  private static String scriptBody() {
    try {
      var f = LuaScript.class.getDeclaredField("body");
      f.setAccessible(true);
      return (String) f.get(Scripts.ACQUIRE_OR_RENEW);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void namesWithBracesSpacesAndUnicodeAreIndependentLeases() {
    List<String> names = List.of("{", "}", "a}b{c", "{x}", "with space", "ünïcødé ✓ 漢字",
        "emoji 😀", "%41", "A", "a:b", "*?[]\\", "tab-less/path.like~name");
    String suffix = "-" + UUID.randomUUID();
    long previous = 0;
    for (String base : names) {
      String n = base + suffix;
      HolderId a = HolderId.generate();
      long t = store.acquireOrRenew(n, a, TTL).orElseThrow().token();
      assertThat(t).as(n).isGreaterThan(0);
      assertThat(other.inspect(n)).as(n).isInstanceOfSatisfying(LeaseState.Held.class,
          h -> assertThat(h.holder()).isEqualTo(a));
      previous = t;
    }
    // every name above is held by its own holder: none collided with another ("%41" vs "A")
    for (String base : names) {
      assertThat(other.acquireOrRenew(base + suffix, HolderId.generate(), TTL)).as(base).isEmpty();
    }
    assertThat(previous).isPositive();
  }

  @Test
  void keysOfANameShareOneHashTagThatNoNameCanBreak() {
    for (String n : List.of("{", "}", "}{", "a}b", "ünï", "x y", "%7D")) {
      List<String> keys = store.keysOf(n);
      for (String k : keys) {
        int open = k.indexOf('{');
        int close = k.indexOf('}', open + 1);
        assertThat(open).as(k).isZero();
        assertThat(k.substring(0, close + 1)).as(k).isEqualTo(keys.get(0).substring(0, close + 1));
        assertThat(k.substring(close + 1)).as(k).matches(":(lease|fence|last)");
      }
    }
    assertThat(store.keysOf("billing-nightly"))
        .containsExactly("{leases:billing-nightly}:lease", "{leases:billing-nightly}:fence",
            "{leases:billing-nightly}:last");
    assertThat(store.keysOf("a}b").get(0)).isEqualTo("{leases:a%7Db}:lease");
  }

  @Test
  void keyPrefixesSeparateStores() {
    String n = name();
    try (RedisLeaseStore a = RedisLeaseStore.builder(RedisServers.sharedUri())
        .keyPrefix("app-one:leases").build();
        RedisLeaseStore b = RedisLeaseStore.builder(RedisServers.sharedUri())
            .keyPrefix("app-two:leases").build()) {
      assertThat(a.acquireOrRenew(n, HolderId.generate(), TTL)).isPresent();
      assertThat(b.acquireOrRenew(n, HolderId.generate(), TTL)).isPresent();
      assertThat(a.keysOf(n).get(0)).startsWith("{app-one:leases:");
    }
  }

  @Test
  void callsAfterCloseThrowClosed() {
    RedisLeaseStore s = RedisLeaseStore.builder(RedisServers.sharedUri()).build();
    String n = name();
    HolderId a = HolderId.generate();
    s.acquireOrRenew(n, a, TTL).orElseThrow();
    s.close();
    s.close();
    assertThatThrownBy(() -> s.acquireOrRenew(n, a, TTL))
        .isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.release(n, a)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.token(n)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.inspect(n)).isInstanceOf(LeaseStoreClosedException.class);
    assertThatThrownBy(() -> s.onRelease(n, () -> {}))
        .isInstanceOf(LeaseStoreClosedException.class);
    // closing a store does not release its leases: they expire
    assertThat(store.inspect(n).status()).isEqualTo(LeaseState.Status.HELD);
  }

  @Test
  void malformedUtf16NamesAndHolderIdsAreRefusedAtEveryEntryPoint() {
    String suffix = "-" + UUID.randomUUID();
    HolderId a = HolderId.generate();
    for (String bad : List.of("c\uD800x" + suffix, "c\uDC00x" + suffix)) {
      List<org.assertj.core.api.ThrowableAssert.ThrowingCallable> calls = List.of(
          () -> store.acquireOrRenew(bad, a, TTL), () -> store.release(bad, a),
          () -> store.token(bad), () -> store.inspect(bad), () -> store.onRelease(bad, () -> {}),
          () -> store.keysOf(bad));
      for (var call : calls) {
        assertThatThrownBy(call).as(bad).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("UTF-16");
      }
    }
    for (String bad : List.of("w\uD800", "w\uDC00")) {
      assertThatThrownBy(() -> new HolderId(bad)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("UTF-16");
    }
    assertThatThrownBy(() -> RedisLeaseStore.builder(RedisServers.sharedUri())
        .keyPrefix("p\uD800")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix");
    // "c?x" is what a lossy encoder would have made of them: it is a lease of its own
    String plain = "c?x" + suffix;
    long t = store.acquireOrRenew(plain, a, TTL).orElseThrow().token();
    assertThat(other.inspect(plain)).isInstanceOfSatisfying(LeaseState.Held.class,
        h -> assertThat(h.holder()).isEqualTo(a));
    assertThat(store.token(plain)).hasValue(t);
    assertThat(store.keysOf(plain).get(0)).startsWith("{leases:c%3Fx-");
  }

  @Test
  void aForeignLastRecordStopsARenewalBeforeItExtendsTheLease() {
    String n = name();
    HolderId a = HolderId.generate();
    store.acquireOrRenew(n, a, TTL).orElseThrow();
    List<String> keys = store.keysOf(n);
    admin.sync().pexpire(keys.get(0), 600_000);
    admin.sync().del(keys.get(2));
    admin.sync().set(keys.get(2), "written by someone else");
    assertThatThrownBy(() -> store.acquireOrRenew(n, a, TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(keys.get(2)).hasMessageContaining("string")
        .hasMessageContaining("hash");
    // the renewal changed nothing: the expiry is still the one set by hand, not now + TTL
    assertThat(admin.sync().pttl(keys.get(0))).isGreaterThan(300_000L);
    assertThat(admin.sync().get(keys.get(2))).isEqualTo("written by someone else");
  }

  @Test
  void aForeignLastRecordStopsANewGrantBeforeItDrawsAToken() {
    String n = name();
    List<String> keys = store.keysOf(n);
    admin.sync().rpush(keys.get(2), "written by someone else");
    assertThatThrownBy(() -> store.acquireOrRenew(n, HolderId.generate(), TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(keys.get(2)).hasMessageContaining("list");
    assertThat(admin.sync().exists(keys.get(0), keys.get(1))).isZero();
  }

  @Test
  void aForeignLastRecordStopsAReleaseBeforeItDeletesTheLease() {
    String n = name();
    HolderId a = HolderId.generate();
    long t = store.acquireOrRenew(n, a, TTL).orElseThrow().token();
    List<String> keys = store.keysOf(n);
    admin.sync().del(keys.get(2));
    admin.sync().set(keys.get(2), "written by someone else");
    assertThatThrownBy(() -> store.release(n, a))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(keys.get(2));
    assertThat(admin.sync().hget(keys.get(0), "holder")).isEqualTo(a.value());
    assertThat(admin.sync().hget(keys.get(0), "token")).isEqualTo(Long.toString(t));
  }

  @Test
  void aForeignCounterOrLeaseKeyIsReportedAsSuchWithNothingChanged() {
    String n = name();
    List<String> keys = store.keysOf(n);
    admin.sync().hset(keys.get(1), "not", "a counter");
    assertThatThrownBy(() -> store.acquireOrRenew(n, HolderId.generate(), TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(keys.get(1)).hasMessageContaining("hash");
    assertThatThrownBy(() -> store.inspect(n)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(keys.get(1));
    assertThatThrownBy(() -> store.token(n)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(keys.get(1));
    assertThat(admin.sync().exists(keys.get(0), keys.get(2))).isZero();
    String m = name();
    List<String> mk = store.keysOf(m);
    admin.sync().set(mk.get(0), "not a lease");
    assertThatThrownBy(() -> store.acquireOrRenew(m, HolderId.generate(), TTL))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(mk.get(0));
    assertThatThrownBy(() -> store.release(m, HolderId.generate()))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(mk.get(0));
    assertThat(admin.sync().exists(mk.get(1), mk.get(2))).isZero();
    assertThat(admin.sync().get(mk.get(0))).isEqualTo("not a lease");
  }
}
