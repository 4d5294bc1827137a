package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseListing;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.LeaseListingTck;
import dev.leases.tck.servers.TcpProxy;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The listing kit on etcd, and what the kit cannot know about etcd's keys: other stores' prefixes
 * that share text with this one, names whose escapes sort differently from their characters, keys
 * this store did not write, pages, and a server that does not answer.
 */
class EtcdLeaseListingTest extends LeaseListingTck {

  private static String prefix;
  private static Client admin;

  @BeforeAll
  static void connect() {
    prefix = SecureEtcd.random("list-");
    admin = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }


  @Override
  protected LeaseStore newStore() {
    return store(prefix);
  }

  private static EtcdLeaseStore store(String keyPrefix) {
    return EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(keyPrefix).build();
  }

  private static void hold(EtcdLeaseStore s, List<String> names) {
    assertThat(s.acquireOrRenewAll(names, HolderId.generate(), Duration.ofMinutes(1)).values())
        .allMatch(r -> r.grant().isPresent());
  }

  @Test
  void storesWhosePrefixesShareTextDoNotSeeEachOthersNames() {
    String p = SecureEtcd.random("shared-");
    try (EtcdLeaseStore a = store(p); EtcdLeaseStore ab = store(p + "b");
        EtcdLeaseStore nestedLast = store(p + "/last"); EtcdLeaseStore nestedLease = store(p + "/lease")) {
      hold(a, List.of("x"));
      hold(ab, List.of("x", "y"));
      hold(nestedLast, List.of("z"));
      hold(nestedLease, List.of("w"));
      assertThat(a.names("", 100)).containsExactly("x");
      assertThat(a.names("l", 100)).isEmpty();
      assertThat(ab.names("", 100)).containsExactly("x", "y");
      assertThat(nestedLast.names("", 100)).containsExactly("z");
    }
  }

  @Test
  void hostileCharactersAreListedAsTheyWereGranted() {
    String p = SecureEtcd.random("hostile-");
    List<String> names = List.of("a/b", "a%2Fb", "a%", "a?x", "a#x", "a b", "a+b", "a~",
        "a\u00e9", "a\u65e5\u672c", "a\uD83D\uDE00", "a\\b", "a*", "a.b", "a..");
    try (EtcdLeaseStore s = store(p)) {
      hold(s, names);
      List<String> sorted = new ArrayList<>(names);
      sorted.sort(LeaseListing.CODE_POINT_ORDER);
      assertThat(s.names("", 100)).containsExactlyElementsOf(sorted);
      assertThat(s.names("a/", 100)).containsExactly("a/b");
      assertThat(s.names("a%", 100)).containsExactly("a%", "a%2Fb");
      assertThat(s.names("a%2F", 100)).containsExactly("a%2Fb");
      assertThat(s.names("a ", 100)).containsExactly("a b");
      assertThat(s.names("a\u65e5", 100)).containsExactly("a\u65e5\u672c");
      assertThat(s.names("a\uD83D\uDE00", 100)).containsExactly("a\uD83D\uDE00");
    }
  }

  /**
   * {@code %2F} (an escaped {@code /}) sorts before {@code -} in etcd's byte order, and
   * {@code %C3%A9} (é) before {@code ~}; the listing's order and limit are the names' code points.
   */
  @Test
  void theLimitCutsByCodePointsNotByEtcdsKeyOrder() {
    String p = SecureEtcd.random("order-");
    try (EtcdLeaseStore s = store(p)) {
      hold(s, List.of("job/1", "job-a", "job\u00e9", "job~"));
      assertThat(s.names("job", 1)).containsExactly("job-a");
      assertThat(s.names("job", 3)).containsExactly("job-a", "job/1", "job~");
      assertThat(s.names("job", 4)).containsExactly("job-a", "job/1", "job~", "job\u00e9");
    }
  }

  @Test
  void keysThisStoreDidNotWriteAreSkipped() throws Exception {
    String p = SecureEtcd.random("foreign-");
    try (EtcdLeaseStore s = store(p)) {
      hold(s, List.of("ok"));
      s.fence().write(p + "-data/x", 1, "v");
      for (String foreign : List.of("%zz", "%2f", "%C3", "a/b", "%41", "%0A", "")) {
        admin.getKVClient().put(SecureEtcd.utf8(p + "/last/" + foreign), SecureEtcd.utf8("x")).get(10, TimeUnit.SECONDS);
        admin.getKVClient().put(SecureEtcd.utf8(p + "/lease/" + foreign), SecureEtcd.utf8("x")).get(10, TimeUnit.SECONDS);
      }
      admin.getKVClient().put(SecureEtcd.utf8(p + "/fence/other"), SecureEtcd.utf8("1")).get(10, TimeUnit.SECONDS);
      admin.getKVClient().put(SecureEtcd.utf8(p + "/once/job/fence"), SecureEtcd.utf8("1")).get(10, TimeUnit.SECONDS);
      assertThat(s.names("", 100)).containsExactly("ok");
    }
  }

  /** A name whose companion key was deleted by hand is still listed while it is held. */
  @Test
  void aHeldNameWithoutItsCompanionKeyIsStillListed() throws Exception {
    String p = SecureEtcd.random("companion-");
    try (EtcdLeaseStore s = store(p)) {
      hold(s, List.of("held"));
      admin.getKVClient().delete(new KeyLayout(p).lastKey("held")).get(10, TimeUnit.SECONDS);
      assertThat(s.names("", 100)).containsExactly("held");
    }
  }

  /** More names than one page holds: every page is read, and the limit is still exact. */
  @Test
  void manyPagesAreReadAndTheSmallestNamesKept() {
    String p = SecureEtcd.random("pages-");
    int count = 2 * EtcdLeaseStore.LIST_PAGE_KEYS + 17;
    List<String> names = IntStream.range(0, count).mapToObj(i -> String.format("n%05d", i)).toList();
    try (EtcdLeaseStore s = store(p)) {
      hold(s, names.subList(0, count / 2));
      hold(s, names.subList(count / 2, count));
      assertThat(s.names("", LeaseListing.MAX_LIMIT)).containsExactlyElementsOf(names);
      assertThat(s.names("n", 3)).containsExactly("n00000", "n00001", "n00002");
      assertThat(s.names("n0", 2)).containsExactly("n00000", "n00001");
    }
  }

  @Test
  void aServerThatDoesNotAnswerFailsTheListingWithinTheCallTimeout() throws Exception {
    int port = URI.create(EtcdServers.endpointList().get(0)).getPort();
    try (TcpProxy proxy = new TcpProxy(port);
        EtcdLeaseStore s = EtcdLeaseStore.builder("http://127.0.0.1:" + proxy.port())
            .keyPrefix(prefix).callTimeout(Duration.ofSeconds(1)).build()) {
      assertThatCode(() -> s.names("", 10)).as("a listing before the stall")
          .doesNotThrowAnyException();
      proxy.stall();
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.names("", 10)).isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("list the lease names").hasMessageContaining("did not answer");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      proxy.forward();
    }
  }

}
