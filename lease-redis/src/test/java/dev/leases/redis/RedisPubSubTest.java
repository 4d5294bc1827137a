package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class RedisPubSubTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  @Test
  void releaseHintReachesASubscriberOfThatNameOnly() {
    String uri = RedisServers.sharedUri();
    String n = "pubsub-" + UUID.randomUUID() + " {with braces}";
    String unrelated = "pubsub-" + UUID.randomUUID();
    try (RedisLeaseStore follower = RedisLeaseStore.builder(uri).build();
        RedisLeaseStore leader = RedisLeaseStore.builder(uri).build()) {
      AtomicInteger hints = new AtomicInteger();
      AtomicInteger unrelatedHints = new AtomicInteger();
      AtomicReference<String> thread = new AtomicReference<>();
      LeaseStore.Subscription sub = follower.onRelease(n, () -> {
        thread.set(Thread.currentThread().getName());
        hints.incrementAndGet();
      });
      follower.onRelease(unrelated, unrelatedHints::incrementAndGet);

      HolderId a = HolderId.generate();
      leader.acquireOrRenew(n, a, TTL).orElseThrow();
      assertThat(hints).hasValue(0);
      assertThat(leader.release(n, a)).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(hints::get, v -> v == 1);
      assertThat(thread.get()).isEqualTo("leases-redis-events");

      // a release that fails (not the holder) announces nothing; the unsubscribed listener hears
      // nothing more. Hints are delivered in order on one thread, so once the unrelated name's
      // hint arrives, any hint for n sent before it would have arrived too.
      sub.close();
      leader.acquireOrRenew(n, a, TTL).orElseThrow();
      assertThat(leader.release(n, HolderId.generate())).isFalse();
      assertThat(leader.release(n, a)).isTrue();
      HolderId b = HolderId.generate();
      leader.acquireOrRenew(unrelated, b, TTL).orElseThrow();
      leader.release(unrelated, b);
      await().atMost(Duration.ofSeconds(5)).until(unrelatedHints::get, v -> v == 1);
      assertThat(hints).hasValue(1);
    }
  }
}
