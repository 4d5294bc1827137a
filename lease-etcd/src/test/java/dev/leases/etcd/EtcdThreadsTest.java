package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A store built from endpoints runs its client on its own few threads, however many names it
 * holds: gRPC's default executor is an unbounded cached pool, and a batch of 10,000 names is ~80
 * concurrent calls whose callbacks could each take one of its threads. Counts are taken as growth
 * over the threads alive before the test, since other tests in this JVM build clients of their own.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EtcdThreadsTest {

  private static final String GRPC_DEFAULT = "grpc-default-executor";

  private static Set<Thread> named(String prefix) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith(prefix)).collect(Collectors.toSet());
  }

  private static List<String> newNames(Set<Thread> before, String prefix) {
    return named(prefix).stream().filter(t -> !before.contains(t)).map(Thread::getName).sorted()
        .toList();
  }

  @Test
  void tenThousandNamesRunOnTheStoresOwnFixedThreadsNotGrpcsDefaultExecutor() {
    Set<Thread> grpcBefore = named(GRPC_DEFAULT);
    Set<Thread> ownBefore = named(Calls.OWN_THREAD_PREFIX);
    String base = "t-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      names.add(base + "-" + i);
    }
    HolderId holder = HolderId.generate();
    Duration ttl = Duration.ofSeconds(10);
    EtcdLeaseStore store = EtcdLeaseStore.builder(EtcdServers.endpointList()
        .toArray(String[]::new)).keyPrefix(base).callTimeout(Duration.ofSeconds(30)).build();
    try {
      for (int round = 0; round < 2; round++) { // the grant, then a renewal round
        Map<String, AcquireResult> r = store.acquireOrRenewAll(names, holder, ttl);
        assertThat(r.values()).allMatch(a -> a.grant().isPresent());
      }
      assertThat(store.releaseAll(names, holder).values()).containsOnly(true);

      assertThat(newNames(grpcBefore, GRPC_DEFAULT))
          .as("threads gRPC's default executor started for a store built from endpoints")
          .isEmpty();
      assertThat(newNames(ownBefore, Calls.OWN_THREAD_PREFIX))
          .as("the store's own client threads")
          .hasSizeLessThanOrEqualTo(Calls.OWN_THREADS);
    } finally {
      store.close();
    }
    await().atMost(Duration.ofSeconds(60))
        .until(() -> newNames(ownBefore, Calls.OWN_THREAD_PREFIX).isEmpty());
  }

  /**
   * Release listeners are user code: one that blocks must not hold up the store's calls, which
   * complete on the client's few threads. Five listeners block (more than those threads); the
   * holder's renewals and a new acquire still answer.
   */
  @Test
  void blockingReleaseListenersDoNotHoldUpTheStoresCalls() throws Exception {
    String base = "b-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger fired = new java.util.concurrent.atomic.AtomicInteger();
    HolderId holder = HolderId.generate();
    Duration ttl = Duration.ofSeconds(10);
    EtcdLeaseStore store = EtcdLeaseStore.builder(EtcdServers.endpointList()
        .toArray(String[]::new)).keyPrefix(base).callTimeout(Duration.ofSeconds(5)).build();
    try {
      List<String> names = new ArrayList<>();
      for (int i = 0; i < Calls.OWN_THREADS + 1; i++) {
        String n = base + "-" + i;
        names.add(n);
        assertThat(store.acquireOrRenew(n, holder, ttl)).isPresent();
        store.onRelease(n, () -> {
          fired.incrementAndGet();
          try {
            never.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      for (String n : names) {
        assertThat(store.release(n, holder)).isTrue();
      }
      await("the listeners ran").atMost(Duration.ofSeconds(30)).until(() -> fired.get() >= 1);
      String other = base + "-other";
      assertThat(store.acquireOrRenew(other, holder, ttl)).as("an acquire while listeners block")
          .isPresent();
      assertThat(store.acquireOrRenew(other, holder, ttl)).as("its renewal").isPresent();
      assertThat(store.release(other, holder)).isTrue();
    } finally {
      never.countDown();
      store.close();
    }
  }
}
