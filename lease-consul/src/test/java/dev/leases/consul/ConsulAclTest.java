package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A dedicated agent whose ACLs deny anonymous requests: every request of a store built with a
 * token carries it (the KV and transaction calls of the kiwiproject client, the session request the
 * store sends itself, and the release watch), and a store without one fails saying what to fix.
 */
class ConsulAclTest {

  private static final String TOKEN = UUID.randomUUID().toString();
  private static ConsulProcess agent;

  @BeforeAll
  static void start() throws Exception {
    agent = ConsulProcess.devAgent(true, "acl { enabled = true\n default_policy = \"deny\"\n"
        + " tokens { initial_management = \"" + TOKEN + "\" } }");
  }

  @AfterAll
  static void stop() {
    if (agent != null) {
      agent.close();
    }
  }

  @Test
  void aStoreWithTheTokenWorksEndToEnd() {
    try (LeaseStore s = new ConsulLeaseStoreFactory(n -> n.equals("T") ? TOKEN : null)
            .open(Map.of("url", agent.url(), "aclTokenEnv", "T"));
        LeaseStore follower = ConsulLeaseStore.builder(agent.url()).aclToken(TOKEN).build()) {
      String n = "acl-" + UUID.randomUUID();
      HolderId a = HolderId.generate();
      AtomicInteger hints = new AtomicInteger();
      LeaseStore.Subscription sub = follower.onRelease(n, hints::incrementAndGet);
      LeaseGrant g = s.acquireOrRenew(n, a, Duration.ofSeconds(5)).orElseThrow();
      assertThat(s.acquireOrRenew(n, a, Duration.ofSeconds(5)).orElseThrow().token())
          .isEqualTo(g.token());
      assertThat(follower.inspect(n).lastToken()).isEqualTo(g.token());
      assertThat(s.release(n, a)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> hints.get() == 1);
      sub.close();
    }
  }

  @Test
  void aTokenThatMayReadButNotWriteTheKeysFailsInsteadOfLookingRefused() {
    String policy = "leases-read-only-" + UUID.randomUUID();
    String rules = "key_prefix \"\" { policy = \"read\" }\n"
        + "session_prefix \"\" { policy = \"write\" }";
    RawHttp.put(agent.url(), "/v1/acl/policy",
        RawHttp.JSON.createObjectNode().put("Name", policy).put("Rules", rules).toString(), TOKEN);
    String tokenBody = RawHttp.JSON.createObjectNode().set("Policies",
        RawHttp.JSON.createArrayNode().add(RawHttp.JSON.createObjectNode().put("Name", policy)))
        .toString();
    String readOnly = RawHttp.put(agent.url(), "/v1/acl/token", tokenBody, TOKEN)
        .get("SecretID").asText();
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(agent.url()).aclToken(readOnly).build()) {
      String n = "acl-ro-" + UUID.randomUUID();
      assertThat(s.inspect(n).status()).as("reads are allowed").isNotNull();
      // the lock transaction is denied: Consul answers 409 as for a lost race, with the reason
      assertThatThrownBy(() -> s.acquireOrRenew(n, HolderId.generate(), Duration.ofSeconds(5)))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("acquireOrRenew('" + n + "')")
          .hasMessageContaining("lacks permission 'key:write' on \"" + s.keyOf(n) + "\"")
          .hasMessageContaining("key_prefix \"leases/\" { policy = \"write\" }")
          .hasMessageNotContaining(readOnly);
    }
  }

  @Test
  void aStoreWithoutTheTokenOrWithAnUnknownOneFailsSayingWhatToFix() {
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(agent.url()).build()) {
      assertThatThrownBy(() -> s.acquireOrRenew("acl-" + UUID.randomUUID(), HolderId.generate(),
          Duration.ofSeconds(5)))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("without an ACL token")
          .hasMessageContaining("aclTokenFile");
      assertThatThrownBy(() -> s.inspect("acl-" + UUID.randomUUID()))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("inspect(")
          .hasMessageContaining("key:read");
    }
    String unknown = UUID.randomUUID().toString();
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(agent.url()).aclToken(unknown).build()) {
      assertThatThrownBy(() -> s.acquireOrRenew("acl-" + UUID.randomUUID(), HolderId.generate(),
          Duration.ofSeconds(5)))
          .isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("does not know the ACL token")
          .hasMessageContaining("SecretID")
          .hasMessageNotContaining(unknown);
    }
    assertThatThrownBy(() -> ConsulLeaseStore.builder(agent.url()).aclToken("has space"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("aclToken");
  }
}
