package dev.leases.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.postgres.PostgresServers;
import dev.leases.spring.LeaderLoops;
import dev.leases.spring.LeaseContext;
import dev.leases.spring.OnlyWhileLeader;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * {@code @OnlyWhileLeader} in two real contexts on PostgreSQL: only the leader's calls run, with
 * the leader's token in {@link LeaseContext}; the follower's return without running; after the
 * leader's context closes, the other's calls run under a larger token.
 */
class OnlyWhileLeaderContextTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Reports reports() {
      return new Reports();
    }
  }

  static class Reports {
    private final List<Long> ranWithTokens = new CopyOnWriteArrayList<>();

    @OnlyWhileLeader("reports")
    public boolean publish() {
      ranWithTokens.add(LeaseContext.currentToken());
      return true;
    }

    /** Through a method: the bean is a class proxy, whose own fields are not the target's. */
    public List<Long> ranWithTokens() {
      return ranWithTokens;
    }
  }

  private static ConfigurableApplicationContext start(String suffix) {
    List<String> p = new java.util.ArrayList<>(PostgresContexts.tables(PostgresServers.url(),
        suffix));
    p.add("leases.leaders.reports.ttl=15s");
    return PostgresContexts.start(App.class, p);
  }

  private static long token(ConfigurableApplicationContext ctx) {
    return ctx.getBean(LeaderLoops.class).get("reports").currentToken();
  }

  @Test
  void onlyTheLeadersCallsRunAndTheyCarryItsToken() {
    String suffix = PostgresContexts.fresh("owl");
    ConfigurableApplicationContext a = start(suffix);
    try (ConfigurableApplicationContext b = start(suffix)) {
      await().atMost(Duration.ofSeconds(30))
          .until(() -> token(a) != 0 || token(b) != 0);
      ConfigurableApplicationContext leader = token(a) != 0 ? a : b;
      ConfigurableApplicationContext follower = leader == a ? b : a;
      long t1 = token(leader);
      Reports led = leader.getBean(Reports.class);
      Reports followed = follower.getBean(Reports.class);
      for (int i = 0; i < 3; i++) {
        assertThat(led.publish()).as("the leader's call runs").isTrue();
        assertThat(followed.publish()).as("the follower's call is skipped (false)").isFalse();
      }
      assertThat(led.ranWithTokens()).as("the leader ran with its token").containsExactly(t1, t1, t1);
      assertThat(followed.ranWithTokens()).as("the follower never ran").isEmpty();
      assertThatThrownBy(LeaseContext::currentToken).as("no token outside the call")
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("@OnlyWhileLeader");

      leader.close();
      await().atMost(Duration.ofSeconds(10)).until(() -> token(follower) != 0);
      assertThat(followed.publish()).as("after the handover the other context's call runs")
          .isTrue();
      assertThat(followed.ranWithTokens()).singleElement().satisfies(t ->
          assertThat(t).isGreaterThan(t1));
    } finally {
      a.close();
    }
  }
}
