package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Least privilege, token sources and TLS against {@link SecureConsul} (HTTPS only,
 * {@code verify_incoming}, ACLs deny by default): an observer token reads, watches and is refused
 * every write; a token without the session rules is refused naming them; a rotated token file is
 * used without a restart; an untrusted certificate, a missing or unrelated client certificate and
 * a plaintext URL fail at once saying what to check.
 */
class ConsulSecurityTest {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static SecureConsul consul;
  private static String prefix;
  private static String holderToken;

  @BeforeAll
  static void tokens() throws Exception {
    consul = SecureConsul.shared();
    prefix = SecureConsul.random("security-");
    holderToken = consul.token(prefix, ConsulPolicies.Access.HOLDER);
  }

  private static String name() {
    return "sec-" + UUID.randomUUID();
  }

  @Test
  void anObserverReadsAndWatchesButEveryWriteIsRefused() {
    String observerToken = consul.token(prefix, ConsulPolicies.Access.OBSERVER);
    try (LeaseStore holder = consul.builder(consul.url()).keyPrefix(prefix).aclToken(holderToken)
            .build();
        ConsulLeaseStore observer = consul.builder(consul.url()).keyPrefix(prefix)
            .aclToken(observerToken).build()) {
      String n = name();
      HolderId a = HolderId.generate();
      LeaseGrant g = holder.acquireOrRenew(n, a, TTL).orElseThrow();
      assertThat(observer.inspect(n)).isInstanceOfSatisfying(LeaseState.Held.class,
          h -> assertThat(h.holder()).isEqualTo(a));
      assertThat(observer.token(n)).hasValue(g.token());
      AtomicInteger hints = new AtomicInteger();
      LeaseStore.Subscription sub = observer.onRelease(n, hints::incrementAndGet);
      // a held name: the true answer, read without writing anything
      assertThat(observer.acquireOrRenew(n, HolderId.generate(), TTL)).isEmpty();
      String free = name();
      assertThatThrownBy(() -> observer.acquireOrRenew(free, HolderId.generate(), TTL))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("acquireOrRenew('" + free + "')")
          .hasMessageContaining("session:write")
          .hasMessageContaining("ConsulPolicies.rules(\"" + prefix + "\", HOLDER)")
          .hasMessageNotContaining(observerToken);
      assertThat(observer.inspect(free)).isInstanceOf(LeaseState.Free.class);
      assertThatThrownBy(() -> observer.release(n, a))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("release('" + n + "'");
      assertThat(observer.inspect(n)).as("the refused release changed nothing")
          .isInstanceOf(LeaseState.Held.class);
      assertThat(holder.release(n, a)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> hints.get() >= 1);
      sub.close();
    }
    // confined to its prefix: another prefix's leases are not even readable
    try (LeaseStore elsewhere = consul.builder(consul.url()).keyPrefix(prefix + "-other")
        .aclToken(observerToken).build()) {
      assertThatThrownBy(() -> elsewhere.inspect(name()))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("key:read");
    }
    // and a holder of prefix A cannot take, nor even look at, a lease under prefix B
    try (LeaseStore elsewhere = consul.builder(consul.url()).keyPrefix(prefix + "-other")
        .aclToken(holderToken).build()) {
      String n = name();
      assertThatThrownBy(() -> elsewhere.acquireOrRenew(n, HolderId.generate(), TTL))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("acquireOrRenew('" + n + "')")
          .hasMessageNotContaining(holderToken);
    }
  }

  @Test
  void aReleaseWatchThatConsulRefusesSaysSoInTheLogInsteadOfRetryingSilently() {
    String otherPrefix = SecureConsul.random("security-other-");
    String observerElsewhere = consul.token(otherPrefix, ConsulPolicies.Access.OBSERVER);
    String logs = dev.leases.testing.LogCapture.during(() -> {
      try (LeaseStore s = consul.builder(consul.url()).keyPrefix(prefix)
          .aclToken(observerElsewhere).build()) {
        LeaseStore.Subscription sub = s.onRelease(name(), () -> {});
        await().atMost(Duration.ofSeconds(10)).until(() -> dev.leases.testing.LogCapture
            .snapshot().contains("release watch"));
        sub.close();
      }
    });
    assertThat(logs).contains("WARN").contains("refused")
        .contains("key_prefix \"" + prefix + "/\"").doesNotContain(observerElsewhere);
  }

  @Test
  void anObserverReadsRunRecordsAndMayNotWriteThem() {
    String observerToken = consul.token(prefix, ConsulPolicies.Access.OBSERVER);
    HolderId h = HolderId.generate();
    try (ConsulRunLedger writer = ConsulRunLedger.builder(consul.url()).keyPrefix(prefix)
            .aclToken(holderToken).tls(consul.certs.ca(), consul.certs.clientCert(),
                consul.certs.clientKey()).build();
        ConsulRunLedger reader = ConsulRunLedger.builder(consul.url()).keyPrefix(prefix)
            .aclToken(observerToken).tls(consul.certs.ca(), consul.certs.clientCert(),
                consul.certs.clientKey()).build()) {
      writer.complete(writer.begin("job", "run-1", 7, h), v -> {});
      assertThat(reader.completion("job", "run-1")).isPresent();
      assertThatThrownBy(() -> reader.begin("job", "run-2", 8, h))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("key:write");
    }
  }

  @Test
  void sessionRulesConfinedToTheAgentsNodeAreEnough() {
    String node = consul.admin().agentClient().getAgent().getConfig().getNodeName();
    String policy = SecureConsul.random("leases-node-");
    ConsulPolicies.applyRules(consul.admin(), policy,
        ConsulPolicies.rules(prefix, ConsulPolicies.Access.HOLDER, node), "one node",
        Duration.ofSeconds(10));
    String token = ConsulPolicies.token(consul.admin(), UUID.randomUUID().toString(), policy,
        "one node", Duration.ofSeconds(10));
    try (LeaseStore s = consul.builder(consul.url()).keyPrefix(prefix).aclToken(token).build()) {
      String n = name();
      HolderId h = HolderId.generate();
      LeaseGrant g = s.acquireOrRenew(n, h, TTL).orElseThrow();
      assertThat(s.acquireOrRenew(n, h, TTL).orElseThrow().token()).isEqualTo(g.token());
      assertThat(s.inspect(n)).isInstanceOf(LeaseState.Held.class);
      assertThat(s.release(n, h)).isTrue();
    }
  }

  @Test
  void aFenceWriterNeedsWriteOnTheResourceKeysBesidesTheHolderRules() {
    String resources = SecureConsul.random("app-resources-") + "/";
    String policy = SecureConsul.random("leases-fence-");
    ConsulPolicies.applyRules(consul.admin(), policy,
        ConsulPolicies.rules(prefix, ConsulPolicies.Access.HOLDER), "holder only",
        Duration.ofSeconds(10));
    String token = ConsulPolicies.token(consul.admin(), UUID.randomUUID().toString(), policy,
        "fence writer", Duration.ofSeconds(10));
    ConsulTls.Context tls = new ConsulTls(consul.certs.ca(), consul.certs.clientCert(),
        consul.certs.clientKey()).load();
    org.kiwiproject.consul.Consul client = org.kiwiproject.consul.Consul.builder()
        .withUrl(consul.url()).withPing(false).withTokenAuth(token)
        .withSslContext(tls.ssl()).withTrustManager(tls.trust()).build();
    try {
      ConsulFence fence = ConsulFence.of(client, Duration.ofSeconds(5), prefix);
      assertThatThrownBy(() -> fence.put(resources + "report", "v1", 3))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("fenced put of '" + resources + "report'")
          .hasMessageContaining("ConsulPolicies.fenceRules")
          .hasMessageNotContaining(token);
      ConsulPolicies.applyRules(consul.admin(), policy,
          ConsulPolicies.rules(prefix, ConsulPolicies.Access.HOLDER)
              + ConsulPolicies.fenceRules(resources), "holder and fence writer",
          Duration.ofSeconds(10));
      await().atMost(Duration.ofSeconds(10)).ignoreExceptionsInstanceOf(
          ConsulAccessDeniedException.class).untilAsserted(() -> {
            fence.put(resources + "report", "v1", 3);
            assertThatThrownBy(() -> fence.put(resources + "report", "v0", 2))
                .isInstanceOf(dev.leases.FencedOutException.class);
          });
    } finally {
      client.destroy();
    }
  }

  /**
   * Consul leaves out of a listing the keys a token may not read and says so only in a header: a
   * store built from a URL reads it and refuses to answer part of the names (an operator's
   * {@code list} would otherwise miss leases silently); a prefix the token reads whole lists.
   */
  @Test
  void aListingThatConsulFilteredByAclsIsRefusedNotAnsweredInPart() {
    String listed = SecureConsul.random("listing-");
    String policy = SecureConsul.random("leases-partial-read-");
    ConsulPolicies.applyRules(consul.admin(), policy,
        "key_prefix \"" + listed + "/\" { policy = \"read\" }\n"
            + "key_prefix \"" + listed + "/hidden\" { policy = \"deny\" }\n", "partial read",
        Duration.ofSeconds(10));
    String partial = ConsulPolicies.token(consul.admin(), UUID.randomUUID().toString(), policy,
        "partial read", Duration.ofSeconds(10));
    String writer = consul.token(listed, ConsulPolicies.Access.HOLDER);
    try (LeaseStore holder = consul.builder(consul.url()).keyPrefix(listed).aclToken(writer)
            .build();
        ConsulLeaseStore reader = consul.builder(consul.url()).keyPrefix(listed)
            .aclToken(partial).build()) {
      HolderId a = HolderId.generate();
      for (String n : List.of("open-1", "open-2", "hidden-1")) {
        holder.acquireOrRenew(n, a, TTL).orElseThrow();
      }
      assertThat(reader.names("open", 10)).containsExactly("open-1", "open-2");
      assertThatThrownBy(() -> reader.names("", 10))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("X-Consul-Results-Filtered-By-ACLs")
          .hasMessageContaining("names('')").hasMessageContaining("key:read")
          .hasMessageContaining("key_prefix \"" + listed + "/\" { policy = \"read\" }")
          .hasMessageNotContaining(partial);
      holder.releaseAll(List.of("open-1", "open-2", "hidden-1"), a);
    }
  }

  @Test
  void aTokenWithoutTheSessionRulesIsRefusedNamingThem() {
    String policy = SecureConsul.random("leases-keys-only-");
    ConsulPolicies.applyRules(consul.admin(), policy,
        "key_prefix \"" + prefix + "/\" { policy = \"write\" }", "keys only",
        Duration.ofSeconds(10));
    String keysOnly = ConsulPolicies.token(consul.admin(), UUID.randomUUID().toString(), policy,
        "keys only", Duration.ofSeconds(10));
    try (LeaseStore s = consul.builder(consul.url()).keyPrefix(prefix).aclToken(keysOnly)
        .build()) {
      assertThatThrownBy(() -> s.acquireOrRenew(name(), HolderId.generate(), TTL))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("session:write")
          .hasMessageContaining("session_prefix \"\" { policy = \"write\" }")
          .hasMessageNotContaining(keysOnly);
    }
  }

  @Test
  void policiesAndTokensAreCreatedIdempotently() {
    String policy = SecureConsul.random("leases-twice-");
    String accessor = UUID.randomUUID().toString();
    String id = ConsulPolicies.apply(consul.admin(), prefix, policy,
        ConsulPolicies.Access.HOLDER, Duration.ofSeconds(10));
    assertThat(ConsulPolicies.apply(consul.admin(), prefix, policy, ConsulPolicies.Access.HOLDER,
        Duration.ofSeconds(10))).isEqualTo(id);
    String secret = ConsulPolicies.token(consul.admin(), accessor, policy, "twice",
        Duration.ofSeconds(10));
    assertThat(ConsulPolicies.token(consul.admin(), accessor, policy, "twice",
        Duration.ofSeconds(10))).isEqualTo(secret);
    try (LeaseStore s = consul.builder(consul.url()).keyPrefix(prefix).aclToken(secret).build()) {
      assertThat(s.acquireOrRenew(name(), HolderId.generate(), TTL)).isPresent();
    }
    assertThat(ConsulPolicies.rules("myapp/leases", ConsulPolicies.Access.OBSERVER)).isEqualTo(
        "key_prefix \"myapp/leases/\" {\n  policy = \"read\"\n}\n"
            + "session_prefix \"\" {\n  policy = \"read\"\n}\n");
    // a holder's token may not manage ACLs
    org.kiwiproject.consul.Consul holderClient = org.kiwiproject.consul.Consul.builder()
        .withUrl(consul.url()).withPing(false).withTokenAuth(secret)
        .withSslContext(new ConsulTls(consul.certs.ca(), consul.certs.clientCert(),
            consul.certs.clientKey()).load().ssl())
        .build();
    try {
      assertThatThrownBy(() -> ConsulPolicies.apply(holderClient, prefix, policy,
          ConsulPolicies.Access.OBSERVER, Duration.ofSeconds(10)))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("acl:");
    } finally {
      holderClient.destroy();
    }
  }

  @Test
  void aRotatedTokenFileIsUsedFromTheNextRequestsOn() throws Exception {
    String unknown = UUID.randomUUID().toString();
    Path file = SecureConsul.secretFile(unknown + "\n");
    try (LeaseStore s = new ConsulLeaseStoreFactory().open(consul.settings(Map.of(
        ConsulLeaseStoreFactory.KEY_PREFIX, prefix,
        ConsulLeaseStoreFactory.ACL_TOKEN_FILE, file.toString())))) {
      String n = name();
      assertThatThrownBy(() -> s.inspect(n)).isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("does not know the ACL token");
      Files.writeString(file, holderToken + "\n");
      await().atMost(Duration.ofSeconds(10)).ignoreExceptionsInstanceOf(
          ConsulAccessDeniedException.class).until(() -> s.inspect(n) != null);
      assertThat(s.acquireOrRenew(n, HolderId.generate(), TTL)).isPresent();
      Files.writeString(file, ""); // a rotation caught halfway: the last good token stays in use
      Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(
          System.currentTimeMillis() + 60_000)); // seen as changed on the next request
      assertThat(s.inspect(n)).isInstanceOf(LeaseState.Held.class);
    }
    assertThatThrownBy(() -> new ConsulLeaseStoreFactory().open(consul.settings(Map.of(
        ConsulLeaseStoreFactory.ACL_TOKEN_FILE, file.toString()))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(file.toString());
  }

  @Test
  void anUntrustedServerCertificateFailsAtOnceSayingWhatToCheck() {
    Duration timeout = Duration.ofSeconds(30);
    try (LeaseStore s = ConsulLeaseStore.builder(consul.url()).aclToken(holderToken)
        .tls(consul.certs.wrongCa(), consul.certs.clientCert(), consul.certs.clientKey())
        .callTimeout(timeout).build()) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> s.acquireOrRenew(name(), HolderId.generate(), TTL))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("TLS handshake")
          .hasMessageContaining("does not trust the agent's certificate")
          .hasMessageContaining("trustCertFile")
          .hasMessageNotContaining(holderToken);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("fails fast, not at the timeout")
          .isLessThan(timeout.dividedBy(2));
    }
  }

  @Test
  void aMissingOrUnrelatedClientCertificateFailsSayingSo() {
    for (ConsulLeaseStore.Builder b : java.util.List.of(
        ConsulLeaseStore.builder(consul.url()).tls(consul.certs.ca(), null, null),
        ConsulLeaseStore.builder(consul.url()).tls(consul.certs.ca(),
            consul.certs.wrongClientCert(), consul.certs.wrongClientKey()))) {
      try (LeaseStore s = b.aclToken(holderToken).callTimeout(Duration.ofSeconds(30)).build()) {
        long start = System.nanoTime();
        assertThatThrownBy(() -> s.inspect(name()))
            .isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("The agent refused this client's certificate")
            .hasMessageContaining("verify_incoming")
            .hasMessageContaining("clientCertFile");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
      }
    }
  }

  /**
   * The question a call asks after a broken connection to an https:// agent: the agent's own
   * refusal, read on a connection of its own, for a missing or unrelated client certificate; none
   * for an accepted one or for a port where nothing listens.
   */
  @Test
  void askedOnAConnectionOfItsOwnTheAgentSaysWhetherItRefusesTheClient() throws Exception {
    java.net.URI url = java.net.URI.create(consul.url());
    Duration bound = Duration.ofSeconds(10);
    for (ConsulTls refused : java.util.List.of(new ConsulTls(consul.certs.ca(), null, null),
        new ConsulTls(consul.certs.ca(), consul.certs.wrongClientCert(),
            consul.certs.wrongClientKey()))) {
      javax.net.ssl.SSLException e = ConsulTls.refusal(url, refused.load().ssl(), bound);
      assertThat(e).isNotNull();
      assertThat(e.toString()).containsAnyOf("certificate_required", "bad_certificate",
          "unknown_ca", "certificate_unknown");
    }
    ConsulTls accepted = new ConsulTls(consul.certs.ca(), consul.certs.clientCert(),
        consul.certs.clientKey());
    assertThat(ConsulTls.refusal(url, accepted.load().ssl(), bound)).isNull();
    int nothing = dev.leases.tck.servers.FreePorts.pick();
    assertThat(ConsulTls.refusal(java.net.URI.create("https://127.0.0.1:" + nothing),
        accepted.load().ssl(), bound)).isNull();
  }

  @Test
  void aPlaintextUrlToTheHttpsPortAndBadTlsSettingsAreNamed() throws Exception {
    String plain = consul.url().replace("https://", "http://");
    try (LeaseStore s = ConsulLeaseStore.builder(plain).aclToken(holderToken).build()) {
      assertThatThrownBy(() -> s.inspect(name()))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("use an https:// URL");
    }
    assertThatThrownBy(() -> ConsulLeaseStore.builder(plain).tls(consul.certs.ca(), null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("https://");
    assertThatThrownBy(() -> ConsulLeaseStore.builder(consul.url())
        .tls(consul.certs.ca(), consul.certs.clientCert(), null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("its key");
    assertThatThrownBy(() -> ConsulLeaseStore.builder(consul.url())
        .tls(Path.of("/nonexistent/ca.pem"), null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("/nonexistent/ca.pem");
    assertThatThrownBy(() -> ConsulLeaseStore.builder(consul.url())
        .tls(consul.certs.ca(), consul.certs.clientCert(), consul.certs.clientCert()).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PKCS#8");
    assertThatThrownBy(() -> ConsulLeaseStore.builder(consul.url())
        .tls(consul.certs.clientKey(), null, null).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PEM");
    assertThatThrownBy(() -> ConsulLeaseStore.builder(consul.admin()).tls(consul.certs.ca(), null,
        null)).isInstanceOf(IllegalStateException.class).hasMessageContaining("your Consul client");
  }
}
