package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/**
 * Release hints for many names on one store: what {@code LeaseGroup} asks of a store when it holds
 * or wants thousands of names. The watching store talks to the agent through a
 * {@link CountingHttpProxy}, which sees every request it keeps open.
 */
class ConsulReleaseWatchScaleTest {

  private static final Duration TTL = Duration.ofSeconds(60);
  private static final int WAIT_SECONDS = 5;

  /**
   * A holder's store straight on the agent and a follower's through the proxy, on a key prefix of
   * their own.
   */
  private static final class Stores implements AutoCloseable {
    final CountingHttpProxy proxy;
    final ConsulLeaseStore holder;
    final ConsulLeaseStore follower;

    Stores(String url) throws java.io.IOException {
      String prefix = "tests/watch-" + UUID.randomUUID();
      proxy = new CountingHttpProxy(url);
      holder = ConsulLeaseStore.builder(url).keyPrefix(prefix).callTimeout(Duration.ofSeconds(30))
          .build();
      // superseded watch queries stay open until their wait ends: 5 s instead of 30 s
      follower = ConsulLeaseStore.builder(proxy.url()).keyPrefix(prefix)
          .watchWait(Duration.ofSeconds(WAIT_SECONDS)).build();
    }

    @Override
    public void close() {
      follower.close();
      holder.close();
      proxy.close();
    }
  }

  private static List<String> names(int n) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      names.add("w" + i);
    }
    return names;
  }

  @Test
  void twoThousandWatchedNamesKeepAFewRequestsAndThreadsAndEveryReleaseStillFires()
      throws Exception {
    String url = ConsulServers.sharedUrl();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    try (Stores stores = new Stores(url)) {
      CountingHttpProxy proxy = stores.proxy;
      ConsulLeaseStore holder = stores.holder;
      ConsulLeaseStore follower = stores.follower;
      List<String> names = names(2000);
      HolderId a = HolderId.generate();
      assertThat(holder.acquireOrRenewAll(names, a, TTL).values())
          .allMatch(r -> r instanceof AcquireResult.Granted);

      Set<Thread> before = Thread.getAllStackTraces().keySet();
      int threadsBefore = threads.getThreadCount();
      threads.resetPeakThreadCount();
      AtomicIntegerArray hints = new AtomicIntegerArray(names.size());
      AtomicInteger total = new AtomicInteger();
      List<LeaseStore.Subscription> subs = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        int k = i;
        subs.add(follower.onRelease(names.get(i), () -> {
          hints.incrementAndGet(k);
          total.incrementAndGet();
        }));
      }
      assertThat(follower.watchedNames()).isEqualTo(names.size());
      // the first names' own queries, already waiting at Consul when the ninth name switched the
      // store to one query over the prefix, stay open until their wait ends
      await("the watching store settles on a few open requests")
          .atMost(Duration.ofSeconds(60)).during(Duration.ofSeconds(2))
          .untilAsserted(() -> assertThat(proxy.inFlight())
              .as("requests open through the proxy (at most its 16 threads); threads +%d",
                  threads.getThreadCount() - threadsBefore)
              .isLessThanOrEqualTo(2));
      proxy.resetMaxInFlight();

      // renewals give no hint: by batch (keys untouched) and by single calls (keys rewritten)
      holder.acquireOrRenewAll(names, a, TTL);
      for (int i = 0; i < 20; i++) {
        holder.acquireOrRenew(names.get(i), a, TTL).orElseThrow();
      }
      await("renewals give no hint").during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5))
          .until(() -> total.get() == 0);

      // a release of any one name fires its listener, and only its
      for (int i : new int[] {0, 1234, 1999}) {
        assertThat(holder.release(names.get(i), a)).isTrue();
        await("hint for the release of " + names.get(i)).atMost(Duration.ofSeconds(10))
            .until(() -> hints.get(i) == 1);
      }
      RawHttp.call(url, "DELETE", "/v1/kv/" + holder.keyOf(names.get(500)));
      await("hint for the out-of-band delete").atMost(Duration.ofSeconds(10))
          .until(() -> hints.get(500) == 1);
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
          .until(() -> total.get() == 4);

      assertThat(proxy.maxInFlight()).as("requests the watching store kept open at once")
          .isLessThanOrEqualTo(3);
      int peak = threads.getPeakThreadCount();
      List<String> added = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> !before.contains(t) && !t.getName().startsWith("counting-proxy"))
          .map(Thread::getName).sorted().toList();
      System.out.printf("WATCH %d names: at most %d requests open, peak threads +%d (the proxy's"
          + " 16 included), new threads %s%n", names.size(), proxy.maxInFlight(),
          peak - threadsBefore, added);
      assertThat(added).as("threads the stores added while %d names were watched", names.size())
          .hasSizeLessThanOrEqualTo(30);

      // back to a few names: hints still fire (the watch of each is its own again)
      for (int i = 0; i < subs.size(); i++) {
        if (i != 7 && i != 8) {
          subs.get(i).close();
        }
      }
      assertThat(follower.watchedNames()).isEqualTo(2);
      assertThat(holder.release(names.get(7), a)).isTrue();
      await("hint for a name watched again on its own").atMost(Duration.ofSeconds(10))
          .until(() -> hints.get(7) == 1);
      holder.releaseAll(names, a);
    }
  }

  /**
   * What a busy prefix costs a store that watches many names: the requests and bytes its watch
   * receives while another store renews the names by batch (no key written) and by single calls
   * (each rewrites its key, so each can end the prefix query). Printed; the assertions check that
   * batch renewals change nothing the watch sees and that single calls do.
   */
  @Test
  void batchRenewalsCostThePrefixWatchNothingAndSingleCallsCostAListingEach() throws Exception {
    String url = ConsulServers.sharedUrl();
    try (Stores stores = new Stores(url)) {
      CountingHttpProxy proxy = stores.proxy;
      ConsulLeaseStore holder = stores.holder;
      ConsulLeaseStore follower = stores.follower;
      List<String> names = names(1000);
      HolderId a = HolderId.generate();
      holder.acquireOrRenewAll(names, a, TTL);
      List<LeaseStore.Subscription> subs = new ArrayList<>();
      names.forEach(n -> subs.add(follower.onRelease(n, () -> {})));
      await("one query open (the first names' own ones end within their wait)")
          .atMost(Duration.ofSeconds(60)).during(Duration.ofSeconds(1))
          .until(() -> proxy.inFlight() == 1);
      long requests = proxy.requests();
      long bytes = proxy.answerBytes();
      long changed = proxy.changedAnswers();
      for (int i = 0; i < 5; i++) {
        holder.acquireOrRenewAll(names, a, TTL);
      }
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
          .until(() -> proxy.inFlight() == 1);
      long batchRequests = proxy.requests() - requests;
      long batchBytes = proxy.answerBytes() - bytes;
      // the prefix query's wait may run out during the rounds (an answer with the same
      // index, and one more listing); what the rounds must not do is change the prefix
      assertThat(proxy.changedAnswers() - changed)
          .as("watch answers with a new index during 5 batch renewal rounds of every name")
          .isZero();
      assertThat(batchRequests).as("listings during 5 batch renewal rounds (a wait may run out)")
          .isLessThanOrEqualTo(1);

      requests = proxy.requests();
      bytes = proxy.answerBytes();
      changed = proxy.changedAnswers();
      int singles = 50;
      for (int i = 0; i < singles; i++) {
        holder.acquireOrRenew(names.get(i), a, TTL).orElseThrow();
      }
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
          .until(() -> proxy.inFlight() == 1);
      long singleRequests = proxy.requests() - requests;
      assertThat(proxy.changedAnswers() - changed)
          .as("single-call renewals rewrite keys, so the watch sees a new index (the counter works)")
          .isPositive();
      long singleBytes = proxy.answerBytes() - bytes;
      int plain = RawHttp.get(url, "/v1/kv/" + holder.keyPrefix() + "/?recurse").toString().length();
      System.out.printf("BUSY prefix of %d keys watched: 5 batch rounds -> %d listings, %d bytes;"
          + " %d single-call renewals -> %d listings, %d bytes on the wire (gzip); one listing is"
          + " %d bytes of JSON (%d per key)%n", names.size(), batchRequests, batchBytes, singles,
          singleRequests, singleBytes, plain, plain / names.size());
      subs.forEach(LeaseStore.Subscription::close);
      holder.releaseAll(names, a);
    }
  }
}
