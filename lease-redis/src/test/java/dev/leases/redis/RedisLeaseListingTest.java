package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.LeaseListingTck;
import dev.leases.tck.servers.TcpProxy;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The listing kit against the shared Redis server, and what the kit cannot know: key prefixes
 * that nest or hold glob characters, keys of other shapes under the prefix, the companion keys a
 * released name leaves, a server that stops answering in the middle.
 */
class RedisLeaseListingTest extends LeaseListingTck {

  private static final Duration TTL = Duration.ofMinutes(1);
  private static RedisAdmin admin;

  @BeforeAll
  static void open() {
    admin = RedisAdmin.connect(RedisServers.sharedUri());
  }

  @AfterAll
  static void close() {
    admin.close();
  }

  /** A 10 s command timeout: the listing scans the shared server's whole keyspace. */
  @Override
  protected LeaseStore newStore() {
    return store("leases");
  }

  private static RedisLeaseStore store(String keyPrefix) {
    return RedisLeaseStore.builder(RedisServers.sharedUri()).keyPrefix(keyPrefix)
        .commandTimeout(Duration.ofSeconds(10)).build();
  }

  private static String id() {
    return UUID.randomUUID().toString().substring(0, 8);
  }

  private static void hold(RedisLeaseStore s, String... names) {
    HolderId h = HolderId.generate();
    for (String n : names) {
      assertThat(s.acquireOrRenew(n, h, TTL)).as(n).isPresent();
    }
  }

  /**
   * Prefix {@code p:b}'s keys ({@code {p:b:x}:lease}) match the pattern of prefix {@code p} and
   * name prefix {@code b} ({@code {p:b*}:lease}); they are another store's names, not {@code p}'s
   * name {@code b:x} (whose key is {@code {p:b%3Ax}:lease}).
   */
  @Test
  void aNestedKeyPrefixsNamesAreNotListed() {
    String p = "nest-" + id();
    try (RedisLeaseStore outer = store(p); RedisLeaseStore inner = store(p + ":b")) {
      hold(inner, "x", "y");
      hold(outer, "b", "b:x");
      assertThat(outer.names("", 100)).containsExactly("b", "b:x");
      assertThat(outer.names("b", 100)).containsExactly("b", "b:x");
      assertThat(inner.names("", 100)).containsExactly("x", "y");
    }
  }

  /**
   * A key prefix cannot hold glob characters (the store refuses {@code a*}, so it can never list
   * prefix {@code ab}'s names), and the pattern's text is escaped anyway: against the server, the
   * escaped text of a key with each glob character matches that key and no other.
   */
  @Test
  void globCharactersAreRefusedInKeyPrefixesAndEscapedInPatterns() {
    for (String bad : List.of("a*", "a?", "a[b]", "a\\b")) {
      assertThatThrownBy(() -> RedisLeaseStore.builder(RedisServers.sharedUri()).keyPrefix(bad))
          .as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("glob characters");
    }
    String p = "glob-" + id();
    List<String> written = new ArrayList<>();
    for (String c : List.of("*", "?", "[", "]", "\\", "[b]", "b", "bb", "")) {
      String key = "{" + p + c + ":x}:lease";
      admin.sync().set(key, "raw");
      written.add(key);
    }
    try {
      for (String key : written) {
        assertThat(scan(KeyLayout.globLiteral(key))).as(key).containsExactly(key);
      }
      assertThat(scan(KeyLayout.globLiteral("{" + p + "*") + "*"))
          .containsExactly("{" + p + "*:x}:lease");
      assertThat(scan(KeyLayout.globLiteral("{" + p + "[") + "*"))
          .containsExactlyInAnyOrder("{" + p + "[:x}:lease", "{" + p + "[b]:x}:lease");
    } finally {
      admin.sync().del(written.toArray(String[]::new));
    }
  }

  /**
   * Keys under the prefix that the store never writes as a lease key are skipped, whatever the
   * pattern matched: lower-case or cut escapes, bytes that are not UTF-8, a name the store would
   * refuse, text after the suffix; a released name's counter and last-tenure keys, and a run
   * ledger's keys, are not lease keys. A lease key written by hand in the store's shape is a
   * name.
   */
  @Test
  void onlyThePrefixsLeaseKeysAreNames() {
    String p = "shape-" + id();
    List<String> foreign = List.of("{" + p + ":lower%2a}:lease", "{" + p + ":cut%2}:lease",
        "{" + p + ":bad%FF}:lease", "{" + p + ":tab%09}:lease", "{" + p + ":}:lease",
        "{" + p + ":x}:lease}:lease", "{" + p + ":x}:leased", "{" + p + ":ok}:fence",
        "{" + p + ":{x}:lease", "{" + p + ":ü}:lease");
    foreign.forEach(k -> admin.sync().set(k, "raw"));
    String byHand = "{" + p + ":by-hand%20%F0%9F%98%80}:lease";
    admin.sync().hset(byHand, "holder", "h");
    try (RedisLeaseStore s = store(p); RedisRunLedger ledger = RedisRunLedger.on(s)) {
      hold(s, "held");
      HolderId owner = HolderId.generate();
      assertThat(s.acquireOrRenew("gone", owner, TTL)).isPresent();
      assertThat(s.release("gone", owner)).isTrue(); // leaves its :fence and :last keys
      ledger.begin("job", "run", 1, owner); // ledger keys under the tag of once/job, no lease key
      assertThat(admin.sync().exists(ledger.keysOf("job").toArray(String[]::new))).isPositive();

      assertThat(s.names("", 100)).containsExactly("by-hand \uD83D\uDE00", "held");
    } finally {
      admin.sync().del(foreign.toArray(String[]::new));
      admin.sync().del(byHand);
    }
  }

  /**
   * A server that stops answering in the middle of a listing (the connection stalls after the
   * store connected) fails it with the command timeout, saying what did not finish; it never
   * hangs.
   */
  @Test
  void aStalledServerFailsTheListingWithinTheCommandTimeout() throws Exception {
    try (TcpProxy proxy = new TcpProxy(RedisServers.sharedPort());
        RedisLeaseStore s = RedisLeaseStore.builder("redis://127.0.0.1:" + proxy.port())
            .commandTimeout(Duration.ofMillis(500)).build()) {
      hold(s, "stall-" + id());
      proxy.stall();
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.names("", 10)).isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("finish listing lease names")
          .hasMessageContaining("SCAN visits every key");
      // far below the minutes a hung call would take
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
      proxy.forward();
    }
  }

  /** Every key matching {@code pattern} on the shared server, by the admin's own SCAN loop. */
  private static List<String> scan(String pattern) {
    List<String> found = new ArrayList<>();
    ScanArgs args = ScanArgs.Builder.matches(pattern).limit(1000);
    KeyScanCursor<String> c = admin.sync().scan(args);
    found.addAll(c.getKeys());
    while (!c.isFinished()) {
      c = admin.sync().scan(ScanCursor.of(c.getCursor()), args);
      found.addAll(c.getKeys());
    }
    return found;
  }
}
