package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RedisFenceTest {

  private static RedisAdmin admin;
  private static RedisFence fence;

  @BeforeAll
  static void open() {
    admin = RedisAdmin.connect(RedisServers.sharedUri());
    fence = RedisFence.of(admin.connection(), Duration.ofSeconds(2));
  }

  @AfterAll
  static void close() {
    admin.close();
  }

  @Test
  void equalTokenWritesTwiceLowerIsRejectedUnchangedHigherWins() {
    String key = "{fence-test-" + UUID.randomUUID() + "}:state";
    fence.set(key, "first", 10);
    fence.set(key, "second", 10);
    assertThat(admin.sync().get(key)).isEqualTo("second");
    assertThat(fence.highestToken(key)).hasValue(10);

    assertThatThrownBy(() -> fence.set(key, "stale", 9))
        .isInstanceOfSatisfying(FencedOutException.class, e -> {
          assertThat(e.resource()).isEqualTo(key);
          assertThat(e.presentedToken()).isEqualTo(9);
          assertThat(e.highestToken()).isEqualTo(10);
        });
    assertThat(admin.sync().get(key)).isEqualTo("second");
    assertThat(fence.highestToken(key)).hasValue(10);

    fence.set(key, "newer", 11);
    assertThat(admin.sync().get(key)).isEqualTo("newer");
    assertThatThrownBy(() -> fence.set(key, "old leader again", 10))
        .isInstanceOf(FencedOutException.class);
    assertThat(admin.sync().get(key)).isEqualTo("newer");
  }

  @Test
  void hashWritesAreFencedToo() {
    String key = "fence-hash-" + UUID.randomUUID();
    fence.hset(key, Map.of("status", "running", "by", "a"), 5);
    assertThatThrownBy(() -> fence.hset(key, Map.of("status", "stale"), 4))
        .isInstanceOf(FencedOutException.class);
    assertThat(admin.sync().hgetall(key)).containsExactlyInAnyOrderEntriesOf(
        Map.of("status", "running", "by", "a"));
    fence.hset(key, Map.of("status", "done"), 5);
    assertThat(admin.sync().hget(key, "status")).isEqualTo("done");
  }

  @Test
  void tokensCompareExactlyBeyondDoublePrecision() {
    String key = "{fence-big-" + UUID.randomUUID() + "}";
    long big = Long.MAX_VALUE - 1;
    fence.set(key, "big", big);
    // differs from big only below double precision: a float comparison would call them equal
    assertThatThrownBy(() -> fence.set(key, "smaller", big - 1))
        .isInstanceOf(FencedOutException.class);
    fence.set(key, "max", Long.MAX_VALUE);
    assertThat(fence.highestToken(key)).hasValue(Long.MAX_VALUE);
    // a shorter number is smaller, though it sorts after as text
    String key2 = "{fence-len-" + UUID.randomUUID() + "}";
    fence.set(key2, "v", 100);
    assertThatThrownBy(() -> fence.set(key2, "v", 99)).isInstanceOf(FencedOutException.class);
  }

  @Test
  void badInputSaysWhatToChange() {
    assertThatThrownBy(() -> fence.set("k", "v", 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive");
    assertThatThrownBy(() -> fence.set("a}b", "v", 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("hash tag");
    assertThatThrownBy(() -> fence.hset("k", Map.of(), 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void fenceKeyIsBesideTheResource() {
    assertThat(RedisFence.fenceKeyOf("{orders}:state")).isEqualTo("leases:fence:{orders}:state");
    assertThat(RedisFence.fenceKeyOf("orders:state"))
        .isEqualTo("leases:fence-key:{orders:state}");
    assertThat(RedisFence.fenceKeyOf("a{")).isEqualTo("leases:fence-key:{a{}");
  }

  @Test
  void aPlainKeyAndItsBracedTwinHaveIndependentFences() {
    String x = "fence-twin-" + UUID.randomUUID();
    String braced = "{" + x + "}";
    assertThat(RedisFence.fenceKeyOf(x)).isNotEqualTo(RedisFence.fenceKeyOf(braced));
    fence.set(braced, "high", 100);
    fence.set(x, "low", 50); // another resource: its fence has seen nothing
    assertThat(fence.highestToken(x)).hasValue(50);
    assertThat(fence.highestToken(braced)).hasValue(100);
    assertThatThrownBy(() -> fence.set(braced, "stale", 50))
        .isInstanceOf(FencedOutException.class);
    assertThat(admin.sync().get(braced)).isEqualTo("high");
  }

  @Test
  void aResourceKeyThatIsAFenceKeyIsRefusedSoNoLowerTokenGetsIn() {
    String x = "fence-alias-" + UUID.randomUUID();
    for (String resource : List.of(x, "{" + x + "}", "{" + x + "}:state")) {
      fence.set(resource, "by 100", 100);
      String fenceKey = RedisFence.fenceKeyOf(resource);
      assertThatThrownBy(() -> fence.set(fenceKey, "1", 1)).as(resource)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("reserved").hasMessageContaining(fenceKey);
      assertThatThrownBy(() -> fence.hset(fenceKey, Map.of("f", "v"), 1)).as(resource)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
      assertThatThrownBy(() -> fence.highestToken(fenceKey)).as(resource)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
      assertThatThrownBy(() -> RedisFence.fenceKeyOf(fenceKey)).as(resource)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
      assertThatThrownBy(() -> fence.set(resource, "by 50", 50)).as(resource)
          .isInstanceOf(FencedOutException.class);
      assertThat(admin.sync().get(resource)).as(resource).isEqualTo("by 100");
      assertThat(fence.highestToken(resource)).as(resource).hasValue(100);
    }
  }

  @Test
  void theLeaseStoresKeysAreRefused() {
    String n = "fence-store-" + UUID.randomUUID();
    try (RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build();
        RedisLeaseStore prefixed = RedisLeaseStore.builder(RedisServers.sharedUri())
            .keyPrefix("my.app:leases").build()) {
      long token = store.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(5))
          .orElseThrow().token();
      for (String key : List.of(store.keysOf(n), prefixed.keysOf(n), store.keysOf("{x}"),
          store.keysOf("a}b")).stream().flatMap(List::stream).toList()) {
        assertThatThrownBy(() -> fence.set(key, "1", 1)).as(key)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("lease store").hasMessageContaining(key);
        assertThatThrownBy(() -> fence.hset(key, Map.of("token", "1"), 1)).as(key)
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease store");
      }
      assertThat(store.token(n)).hasValue(token);
      assertThat(admin.sync().get(store.keysOf(n).get(1))).isEqualTo(Long.toString(token));
      // keys that merely look alike are the user's
      for (String key : List.of("{leases:" + n + "}:state", "leases:" + n + ":lease",
          "{leases}:lease", "{" + n + "}:fence")) {
        fence.set(key, "ok", 1);
      }
    }
  }

  @Test
  void aFailedHashWriteLeavesTheFenceWhereItWas() {
    String key = "{fence-wrongtype-" + UUID.randomUUID() + "}:state";
    fence.set(key, "a string", 5);
    assertThatThrownBy(() -> fence.hset(key, Map.of("f", "v"), 9))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(key).hasMessageContaining("string").hasMessageContaining("hash");
    assertThat(fence.highestToken(key)).hasValue(5);
    fence.set(key, "by 6", 6); // 9 never landed, so 6 is still the highest
    assertThat(admin.sync().get(key)).isEqualTo("by 6");

    String list = "{fence-wrongtype-" + UUID.randomUUID() + "}:queue";
    fence.hset(list, Map.of("f", "v"), 5);
    admin.sync().del(list);
    admin.sync().rpush(list, "item");
    assertThatThrownBy(() -> fence.hset(list, Map.of("f", "v"), 9))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("list");
    assertThat(admin.sync().lrange(list, 0, -1)).containsExactly("item");
    assertThat(fence.highestToken(list)).hasValue(5);
    admin.sync().del(list);
    fence.hset(list, Map.of("f", "by 6"), 6);
    assertThat(admin.sync().hget(list, "f")).isEqualTo("by 6");
  }

  @Test
  void malformedUtf16IsRefusedInKeysFieldsAndValues() {
    String base = "fence-utf16-" + UUID.randomUUID();
    for (String bad : List.of(base + "c\uD800x", base + "c\uDC00x", base + "\uD800")) {
      assertThatThrownBy(() -> fence.set(bad, "v", 1)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.hset(bad, Map.of("f", "v"), 1)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.highestToken(bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> RedisFence.fenceKeyOf(bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.set(base, bad, 1)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.hset(base, Map.of(bad, "v"), 1)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
      assertThatThrownBy(() -> fence.hset(base, Map.of("f", bad), 1)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-16");
    }
    // nothing was written, and "c?x" is a resource of its own
    assertThat(admin.sync().exists(base + "c?x", base)).isZero();
    fence.set(base + "c?x", "v", 7);
    assertThat(fence.highestToken(base + "c?x")).hasValue(7);
    fence.set(base, "v\uD83D\uDE00", 1); // a complete pair is fine
    assertThat(admin.sync().get(base)).isEqualTo("v\uD83D\uDE00");
  }

  @Test
  void aHashWriteOfManyFieldsLandsWhole() {
    // more arguments than Lua's unpack() takes in one call (about 8000)
    String key = "{fence-wide-" + UUID.randomUUID() + "}:h";
    Map<String, String> fields = new java.util.HashMap<>();
    for (int i = 0; i < 10_000; i++) {
      fields.put("f" + i, "v" + i);
    }
    fence.hset(key, Map.of("f0", "first"), 5);
    fence.hset(key, fields, 9);
    assertThat(admin.sync().hlen(key)).isEqualTo(10_000);
    assertThat(admin.sync().hget(key, "f9999")).isEqualTo("v9999");
    assertThat(fence.highestToken(key)).hasValue(9);
  }
}
