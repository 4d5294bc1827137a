package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;

/**
 * A dedicated agent with {@code acl.enable_key_list_policy = true}: Consul then checks
 * {@code list} on listings, which {@code write} includes and {@code read} does not. What
 * {@link ConsulPolicies} says about it, shown: a holder lists, an observer with the
 * {@link ConsulPolicies.Access#OBSERVER} rules is refused saying what it lacks, and one whose
 * {@code key_prefix} rule is {@code list} lists (and still reads).
 */
class ConsulKeyListPolicyTest {

  private static final String TOKEN = UUID.randomUUID().toString();
  private static final Duration BOUND = Duration.ofSeconds(10);
  private static ConsulProcess agent;
  private static Consul admin;

  @BeforeAll
  static void start() throws Exception {
    agent = ConsulProcess.devAgent(true, "acl { enabled = true\n default_policy = \"deny\"\n"
        + " enable_key_list_policy = true\n tokens { initial_management = \"" + TOKEN + "\" } }");
    admin = Consul.builder().withUrl(agent.url()).withPing(false).withTokenAuth(TOKEN).build();
  }

  @AfterAll
  static void stop() {
    if (admin != null) {
      admin.destroy();
    }
    if (agent != null) {
      agent.close();
    }
  }

  private static String token(String policyName, String rules) {
    ConsulPolicies.applyRules(admin, policyName, rules, "test", BOUND);
    return ConsulPolicies.token(admin, UUID.randomUUID().toString(), policyName, "test", BOUND);
  }

  private static ConsulLeaseStore store(String prefix, String token) {
    return ConsulLeaseStore.builder(agent.url()).keyPrefix(prefix).aclToken(token)
        .callTimeout(BOUND).build();
  }

  @Test
  void listingNeedsListWhichWriteIncludesAndReadDoesNot() {
    String p = SecureConsul.random("keylist-");
    String holder = token("holder-" + p, ConsulPolicies.rules(p, ConsulPolicies.Access.HOLDER));
    String observer = token("observer-" + p,
        ConsulPolicies.rules(p, ConsulPolicies.Access.OBSERVER));
    String lister = token("lister-" + p, "key_prefix \"" + p + "/\" {\n  policy = \"list\"\n}\n"
        + "session_prefix \"\" {\n  policy = \"read\"\n}\n");
    try (ConsulLeaseStore h = store(p, holder); ConsulLeaseStore o = store(p, observer);
        ConsulLeaseStore l = store(p, lister)) {
      long token = h.acquireOrRenew("b", HolderId.generate(), Duration.ofMinutes(1)).orElseThrow()
          .token();
      h.acquireOrRenew("a", HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();
      assertThat(h.names("", 10)).containsExactly("a", "b");
      assertThat(o.token("b")).as("read still reads").hasValue(token);
      assertThatThrownBy(() -> o.names("", 10)).isInstanceOf(ConsulAccessDeniedException.class)
          .hasMessageContaining("names('')").hasMessageContaining("key:list")
          .hasMessageContaining("enable_key_list_policy")
          .hasMessageContaining("key_prefix \"" + p + "/\" { policy = \"list\" }")
          .hasMessageNotContaining(observer);
      assertThat(l.names("", 10)).containsExactly("a", "b");
      assertThat(l.token("b")).hasValue(token);
      assertThat(l.names("c", 10)).isEmpty();
    }
  }
}
