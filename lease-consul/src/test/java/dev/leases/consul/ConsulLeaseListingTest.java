package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseListing;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.LeaseListingTck;
import dev.leases.tck.servers.TcpProxy;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;

/**
 * The listing kit on the shared Consul agent, and what the kit cannot know about Consul's keys:
 * other stores' prefixes that share text with this one, run records beside the leases, names whose
 * escapes sort differently from their characters, keys this store did not write, an agent that
 * does not answer, and what the ACL tokens of {@link ConsulPolicies} may list.
 */
class ConsulLeaseListingTest extends LeaseListingTck {

  private static final Duration TTL = Duration.ofMinutes(1);
  private static String prefix;
  private static Consul admin;

  @BeforeAll
  static void connect() {
    prefix = SecureConsul.random("list-");
    admin = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false).build();
  }

  @AfterAll
  static void disconnect() {
    admin.destroy();
  }

  @Override
  protected LeaseStore newStore() {
    return store(prefix);
  }

  /** A store with a call timeout that a loaded machine does not run out (the default is 2 s). */
  private static ConsulLeaseStore store(String keyPrefix) {
    return ConsulLeaseStore.builder(ConsulServers.sharedUrl()).keyPrefix(keyPrefix)
        .callTimeout(Duration.ofSeconds(10)).build();
  }

  private static void hold(LeaseStore s, List<String> names) {
    assertThat(s.acquireOrRenewAll(names, HolderId.generate(), TTL).values())
        .allMatch(r -> r.grant().isPresent());
  }

  @Test
  void storesWhosePrefixesShareTextDoNotSeeEachOthersNamesNorTheRunRecords() {
    String p = SecureConsul.random("shared-");
    try (ConsulLeaseStore a = store(p); ConsulLeaseStore ab = store(p + "b");
        ConsulLeaseStore nested = store(p + "/x");
        ConsulRunLedger ledger = ConsulRunLedger.builder(ConsulServers.sharedUrl()).keyPrefix(p)
            .build()) {
      hold(a, List.of("x", "y"));
      hold(ab, List.of("z"));
      hold(nested, List.of("w"));
      HolderId h = HolderId.generate();
      long token = a.acquireOrRenew("job", h, TTL).orElseThrow().token();
      ledger.complete(ledger.begin("job", "run-1", token, h), v -> {});
      assertThat(a.names("", 100)).containsExactly("job", "x", "y");
      assertThat(a.names("x", 100)).containsExactly("x");
      assertThat(ab.names("", 100)).containsExactly("z");
      assertThat(nested.names("", 100)).containsExactly("w");
    }
  }

  @Test
  void hostileCharactersAreListedAsTheyWereGranted() {
    List<String> names = List.of("a/b", "a~2Fb", "a%2Fb", "a%", "a?x", "a#x", "a&x=1", "a b",
        "a+b", "a~", "a\u00e9", "a\u65e5\u672c", "a\uD83D\uDE00", "a\\b", "a*", "a.b", "a..",
        "a/../b");
    try (ConsulLeaseStore s = store(SecureConsul.random("hostile-"))) {
      hold(s, names);
      List<String> sorted = new ArrayList<>(names);
      sorted.sort(LeaseListing.CODE_POINT_ORDER);
      assertThat(s.names("", 100)).containsExactlyElementsOf(sorted);
      assertThat(s.names("a/", 100)).containsExactly("a/../b", "a/b");
      assertThat(s.names("a%", 100)).containsExactly("a%", "a%2Fb");
      assertThat(s.names("a~", 100)).containsExactly("a~", "a~2Fb");
      assertThat(s.names("a?", 100)).containsExactly("a?x");
      assertThat(s.names("a#", 100)).containsExactly("a#x");
      assertThat(s.names("a&x=", 100)).containsExactly("a&x=1");
      assertThat(s.names("a ", 100)).containsExactly("a b");
      assertThat(s.names("a..", 100)).containsExactly("a..");
      assertThat(s.names("a\u65e5", 100)).containsExactly("a\u65e5\u672c");
    }
  }

  /**
   * {@code .} is escaped ({@code ~2E}) and so sorts after {@code 0} among Consul's keys; the
   * listing's order and limit are the names' code points.
   */
  @Test
  void theLimitCutsByCodePointsNotByConsulsKeyOrder() {
    try (ConsulLeaseStore s = store(SecureConsul.random("order-"))) {
      hold(s, List.of("job0", "job.x", "job-a", "job\u00e9"));
      assertThat(s.names("job", 2)).containsExactly("job-a", "job.x");
      assertThat(s.names("job", 4)).containsExactly("job-a", "job.x", "job0", "job\u00e9");
    }
  }

  @Test
  void keysThisStoreDidNotWriteAreSkipped() {
    String p = SecureConsul.random("foreign-");
    try (ConsulLeaseStore s = store(p)) {
      hold(s, List.of("ok"));
      for (String foreign : List.of("~zz", "~2f", "~C3", "x.y", "~41", "~0A", "x~", "deep/key")) {
        admin.keyValueClient().putValue(p + "/" + foreign, "x");
      }
      assertThat(s.names("", 100)).containsExactly("ok");
    }
  }

  @Test
  void anAgentThatDoesNotAnswerFailsTheListingWithinTheCallTimeout() throws Exception {
    try (TcpProxy proxy = new TcpProxy(URI.create(ConsulServers.sharedUrl()).getPort());
        ConsulLeaseStore s = ConsulLeaseStore.builder("http://127.0.0.1:" + proxy.port())
            .keyPrefix(prefix).callTimeout(Duration.ofSeconds(1)).build()) {
      assertThatCode(() -> s.names("", 10)).as("a listing before the stall")
          .doesNotThrowAnyException();
      proxy.stall();
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.names("", 10)).isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("names('')")
          // the call's deadline, or the request's read timeout (set to the time left) just before it
          .hasMessageMatching("(?s).*(did not answer|could not be reached.*timeout).*");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      proxy.forward();
    }
  }

  /**
   * Consul leaves out of a listing the keys a token may not read instead of refusing it: an
   * observer of the prefix lists its names, one of another prefix is told it lacks the permission
   * rather than shown an empty list.
   */
  @Test
  void anObserverListsItsPrefixAndATokenOfAnotherPrefixIsRefused() throws Exception {
    SecureConsul consul = SecureConsul.shared();
    String p = SecureConsul.random("acl-list-");
    String holder = consul.token(p, ConsulPolicies.Access.HOLDER);
    String observer = consul.token(p, ConsulPolicies.Access.OBSERVER);
    String elsewhere = consul.token(p + "-other", ConsulPolicies.Access.OBSERVER);
    Duration bound = Duration.ofSeconds(10);
    try (ConsulLeaseStore h = consul.builder(consul.url()).keyPrefix(p).aclToken(holder)
            .callTimeout(bound).build();
        ConsulLeaseStore o = consul.builder(consul.url()).keyPrefix(p).aclToken(observer)
            .callTimeout(bound).build();
        ConsulLeaseStore other = consul.builder(consul.url()).keyPrefix(p).aclToken(elsewhere)
            .callTimeout(bound).build()) {
      hold(h, List.of("b", "a"));
      assertThat(h.names("", 10)).containsExactly("a", "b");
      assertThat(o.names("", 10)).containsExactly("a", "b");
      assertThat(o.names("zzz", 10)).isEmpty();
      assertThatThrownBy(() -> other.names("", 10))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("names('')").hasMessageContaining("key:read")
          .hasMessageNotContaining(elsewhere);
    }
  }
}
