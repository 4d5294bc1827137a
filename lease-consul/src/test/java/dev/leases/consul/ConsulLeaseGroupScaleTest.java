package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaseGroup;
import dev.leases.leader.LossReason;
import dev.leases.tck.CountingLeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A {@link LeaseGroup} of 10,000 names on one Consul store (issue 12): the group's first round
 * must acquire every name with its one batch call, within the group's bound on a call (TTL/3), and
 * the next rounds must renew them all with one call each, every name keeping its first token.
 *
 * <p>The first acquire writes 313 transactions of 32 names; when each of them waited out the
 * agent's delayed ACK (Nagle's algorithm on the client's socket: about 40 ms per request body
 * larger than one write), the batch took about 2 s, the group gave up on it at TTL/3 and heard
 * none of its grants.
 */
class ConsulLeaseGroupScaleTest {

  private static final int NAMES = 10_000;
  /**
   * Whole seconds for Consul; TTL/3 = 1.67 s is the group's bound on each batch call. With the
   * delayed ACK, 313 transactions 8 at a time took at least 40 x 40 ms = 1.6 s besides their work.
   */
  private static final Duration TTL = Duration.ofSeconds(5);
  private static final int RENEWAL_ROUNDS = 3;

  @Test
  @Timeout(300)
  void aGroupOfTenThousandNamesAcquiresThemAllInItsFirstCallAndKeepsThemWithOneCallPerRound() {
    String prefix = "leases-scale-" + UUID.randomUUID().toString().substring(0, 8);
    List<String> names = new ArrayList<>(NAMES);
    for (int i = 0; i < NAMES; i++) {
      names.add("n-" + i);
    }
    Map<String, Long> firstToken = new ConcurrentHashMap<>();
    Set<String> broken = ConcurrentHashMap.newKeySet();
    AtomicLong callsWhenAcquired = new AtomicLong();
    warmUp(names);
    try (ConsulLeaseStore consul = ConsulLeaseStore.builder(ConsulServers.sharedUrl())
        .keyPrefix(prefix).build();
        CountingLeaseStore counting = new CountingLeaseStore(consul)) {
      LeaderListener listener = new LeaderListener() {
        @Override
        public void acquired(String name, long token) {
          if (firstToken.putIfAbsent(name, token) != null) {
            broken.add(name + " acquired twice");
          }
          callsWhenAcquired.accumulateAndGet(counting.calls(), Math::max);
        }

        @Override
        public void lost(String name, long token, LossReason reason) {
          if (reason != LossReason.CLOSED) {
            broken.add(name + " lost: " + reason);
          }
        }

        @Override
        public void tokenAdvanced(String name, long oldToken, long newToken) {
          broken.add(name + " token advanced");
        }
      };
      LeaseGroup group = LeaseGroup.builder(counting).label("consul-scale").ttl(TTL)
          .listener(listener).build();
      try {
        names.forEach(group::add);
        group.start();
        await("every name acquired").atMost(Duration.ofSeconds(120))
            .until(() -> firstToken.size() == NAMES || !broken.isEmpty());
        assertThat(broken).as("names not held continuously").isEmpty();
        assertThat(callsWhenAcquired.get())
            .as("store calls made when the last name was heard acquired: the first round's one"
                + " batch; more means the group gave up on it and a later round acquired them")
            .isEqualTo(1);

        await("renewal rounds").atMost(Duration.ofSeconds(120))
            .until(() -> counting.calls() >= 1 + RENEWAL_ROUNDS || !broken.isEmpty());
        assertThat(broken).as("names not held continuously").isEmpty();
        assertThat(group.heldNames()).hasSize(NAMES);
        for (String n : names) {
          assertThat(group.currentToken(n)).as(n).isEqualTo(firstToken.get(n));
        }
      } finally {
        group.close();
      }
    }
  }

  /**
   * The same batch once, untimed, on a prefix of its own, so that the group's first round does
   * not also pay this JVM's class loading and first compilations (a process starting with 10,000
   * names does, once).
   */
  private static void warmUp(List<String> names) {
    try (ConsulLeaseStore warm = ConsulLeaseStore.builder(ConsulServers.sharedUrl())
        .keyPrefix("leases-warm-" + UUID.randomUUID().toString().substring(0, 8))
        .callTimeout(Duration.ofSeconds(10)).build()) {
      HolderId h = HolderId.generate();
      assertThat(warm.acquireOrRenewAll(names, h, TTL).values())
          .allMatch(a -> a instanceof AcquireResult.Granted);
      assertThat(warm.releaseAll(names, h).values()).containsOnly(true);
    }
  }
}
