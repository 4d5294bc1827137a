package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.etcd.EtcdLeaseHistory.Change;
import dev.leases.etcd.EtcdLeaseHistory.Kind;
import dev.leases.tck.servers.TcpProxy;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import dev.leases.testing.RandomNames;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link EtcdLeaseStore#history} against a real etcd, checked against an independent record: a
 * watch from the first grant's revision with the previous values, which sees every put and delete
 * of the lease key, expiries included.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdLeaseHistoryTest {

  private static Client admin;
  private static String prefix;

  @BeforeAll
  static void connect() {
    admin = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
    prefix = SecureEtcd.random("history-");
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }

  private static EtcdLeaseStore store(String endpoint) {
    return EtcdLeaseStore.builder(endpoint).keyPrefix(prefix).build();
  }

  /** Writes {@code count} keys outside the prefix: the revision moves on, the lease does not. */
  private static void otherWrites(Client client, int count) throws Exception {
    for (int i = 0; i < count; i++) {
      client.getKVClient().put(SecureEtcd.utf8(prefix + "-noise/" + i), SecureEtcd.utf8("x")).get(10, TimeUnit.SECONDS);
    }
  }

  /**
   * A granted to A, renewed (no write), renewed with a longer TTL (the key moves to a longer etcd
   * lease: a rewrite), released; granted to B with a larger token, expired. The history lists those
   * five changes newest first, exactly as a watch of the key saw them: revisions (the expiry's
   * found among unrelated writes), holders, tokens and etcd leases.
   */
  @Test
  void showsGrantRewriteReleaseGrantAndExpiryNewestFirstAsAWatchSawThem() throws Exception {
    // a name whose key needs escaping: history finds its keys as every other call does
    String n = SecureEtcd.random("job/") + RandomNames.next(ThreadLocalRandom.current());
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    try (EtcdLeaseStore s = store(EtcdServers.endpoints())) {
      LeaseGrant ga = s.acquireOrRenew(n, a, Duration.ofSeconds(5)).orElseThrow();
      List<WatchEvent> seen = new CopyOnWriteArrayList<>();
      Watch.Watcher watcher = admin.getWatchClient().watch(new KeyLayout(prefix).leaseKey(n),
          WatchOption.builder().withRevision(ga.token()).withPrevKV(true).build(),
          r -> seen.addAll(r.getEvents()));
      try {
        assertThat(s.acquireOrRenew(n, a, Duration.ofSeconds(5))).as("a plain renewal")
            .hasValueSatisfying(g -> assertThat(g.token()).isEqualTo(ga.token()));
        otherWrites(admin, 3);
        assertThat(s.acquireOrRenew(n, a, Duration.ofSeconds(30))).as("a longer TTL moves the key")
            .hasValueSatisfying(g -> assertThat(g.token()).isEqualTo(ga.token()));
        assertThat(s.release(n, a)).isTrue();
        otherWrites(admin, 3);
        LeaseGrant gb = s.acquireOrRenew(n, b, Duration.ofSeconds(1)).orElseThrow();
        assertThat(gb.token()).isGreaterThan(ga.token());
        otherWrites(admin, 40); // B is not renewed: it expires somewhere among or after these
        await().atMost(Duration.ofSeconds(30))
            .until(() -> s.inspect(n) instanceof LeaseState.Expired);
        otherWrites(admin, 25);
        await("the watch saw the five changes").atMost(Duration.ofSeconds(30))
            .until(() -> seen.size() >= 5);

        EtcdLeaseHistory h = s.history(n, 100);

        List<Change> expected = new ArrayList<>();
        List<Kind> deletes = new ArrayList<>(List.of(Kind.RELEASED, Kind.EXPIRED));
        for (WatchEvent e : seen) {
          KeyValue kv = e.getKeyValue();
          if (e.getEventType() == WatchEvent.EventType.PUT) {
            expected.add(new Change(kv.getModRevision(), kv.getModRevision() == kv.getCreateRevision()
                ? Kind.GRANTED : Kind.REWRITTEN, holder(kv), kv.getCreateRevision(), kv.getLease()));
          } else {
            KeyValue prev = e.getPrevKV();
            expected.add(new Change(kv.getModRevision(), deletes.remove(0), holder(prev),
                prev.getCreateRevision(), prev.getLease()));
          }
        }
        Collections.reverse(expected);
        assertThat(h.changes()).as("newest first").containsExactlyElementsOf(expected);
        assertThat(h.changes()).extracting(Change::kind).containsExactly(Kind.EXPIRED,
            Kind.GRANTED, Kind.RELEASED, Kind.REWRITTEN, Kind.GRANTED);
        assertThat(h.changes()).extracting(Change::holder).containsExactly(b, b, a, a, a);
        assertThat(h.changes()).extracting(Change::token)
            .containsExactly(gb.token(), gb.token(), ga.token(), ga.token(), ga.token());
        assertThat(h.changes().get(3).etcdLeaseId()).as("the rewrite's etcd lease")
            .isNotEqualTo(h.changes().get(4).etcdLeaseId());
        assertThat(h.changes().get(0).revision()).as("the expiry came after the 40 writes")
            .isGreaterThan(gb.token() + 40);
        assertThat(h.revision()).isGreaterThanOrEqualTo(h.changes().get(0).revision() + 25);
        assertThat(h.compactRevision()).isZero();
        assertThat(h.truncated()).isFalse();

        // the limit keeps the newest changes and says when earlier ones exist
        EtcdLeaseHistory two = s.history(n, 2);
        assertThat(two.changes()).containsExactlyElementsOf(expected.subList(0, 2));
        assertThat(two.truncated()).isTrue();
        assertThat(s.history(n, 4).changes()).containsExactlyElementsOf(expected.subList(0, 4));
        assertThat(s.history(n, 4).truncated()).isTrue();
        EtcdLeaseHistory five = s.history(n, 5);
        assertThat(five.changes()).containsExactlyElementsOf(expected);
        assertThat(five.truncated()).as("nothing came before the first grant").isFalse();
      } finally {
        watcher.close();
      }
    }
  }

  /**
   * A lease key deleted by hand is an expiry at the revision of the delete (etcd records no
   * difference), with the etcd lease it was on; the next grant follows it.
   */
  @Test
  void aKeyDeletedByHandIsAnExpiryAtTheDeletesRevision() throws Exception {
    String n = SecureEtcd.random("by-hand-");
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    try (EtcdLeaseStore s = store(EtcdServers.endpoints())) {
      LeaseGrant ga = s.acquireOrRenew(n, a, Duration.ofMinutes(1)).orElseThrow();
      long leaseA = admin.getKVClient().get(new KeyLayout(prefix).leaseKey(n))
          .get(10, TimeUnit.SECONDS).getKvs().get(0).getLease();
      otherWrites(admin, 7);
      long deletedAt = admin.getKVClient().delete(new KeyLayout(prefix).leaseKey(n))
          .get(10, TimeUnit.SECONDS).getHeader().getRevision();
      otherWrites(admin, 9);
      LeaseGrant gb = s.acquireOrRenew(n, b, Duration.ofMinutes(1)).orElseThrow();

      EtcdLeaseHistory h = s.history(n, 10);

      assertThat(h.changes()).hasSize(3);
      assertThat(h.changes().get(0)).extracting(Change::kind, Change::revision, Change::holder)
          .containsExactly(Kind.GRANTED, gb.token(), b);
      assertThat(h.changes().get(1))
          .isEqualTo(new Change(deletedAt, Kind.EXPIRED, a, ga.token(), leaseA));
      assertThat(h.changes().get(2))
          .isEqualTo(new Change(ga.token(), Kind.GRANTED, a, ga.token(), leaseA));
      assertThat(h.truncated()).isFalse();
    }
  }

  @Test
  void aNameNeverGrantedHasAnEmptyCompleteHistory() {
    try (EtcdLeaseStore s = store(EtcdServers.endpoints())) {
      EtcdLeaseHistory h = s.history(SecureEtcd.random("never-"), 10);
      assertThat(h.changes()).isEmpty();
      assertThat(h.truncated()).isFalse();
      assertThat(h.compactRevision()).isZero();
      assertThat(h.revision()).isPositive();
    }
  }

  /**
   * After a compaction the history ends at the compact revision, which it reports, instead of
   * failing. A release kept just above it has lost the revision before it, so its etcd lease is
   * unknown (0). On a server of its own: compaction would take history from other tests.
   */
  @Test
  void endsAtTheCompactRevisionAndReportsIt() throws Exception {
    try (TestServer own = TestServers.of(EtcdServers.spec());
        Client ownAdmin = Client.builder().endpoints(own.endpoint()).build();
        EtcdLeaseStore s = store(own.endpoint())) {
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      String early = SecureEtcd.random("early-");
      LeaseGrant ge = s.acquireOrRenew(early, a, Duration.ofSeconds(30)).orElseThrow();
      assertThat(s.release(early, a)).isTrue();
      long releasedAt = s.history(early, 10).changes().get(0).revision();
      otherWrites(ownAdmin, 5);
      String late = SecureEtcd.random("late-");
      LeaseGrant ga = s.acquireOrRenew(late, a, Duration.ofSeconds(30)).orElseThrow();
      assertThat(s.release(late, a)).isTrue();
      otherWrites(ownAdmin, 5);
      LeaseGrant gb = s.acquireOrRenew(late, b, Duration.ofSeconds(30)).orElseThrow();
      otherWrites(ownAdmin, 5);

      ownAdmin.getKVClient().compact(releasedAt).get(10, TimeUnit.SECONDS);

      EtcdLeaseHistory e = s.history(early, 10);
      assertThat(e.changes()).containsExactly(
          new Change(releasedAt, Kind.RELEASED, a, ge.token(), 0));
      assertThat(e.compactRevision()).isEqualTo(releasedAt);
      assertThat(e.truncated()).isFalse();
      EtcdLeaseHistory l = s.history(late, 10);
      assertThat(l.changes()).extracting(Change::kind)
          .containsExactly(Kind.GRANTED, Kind.RELEASED, Kind.GRANTED);
      assertThat(l.compactRevision()).as("all of it above the compaction").isZero();

      ownAdmin.getKVClient().compact(gb.token()).get(10, TimeUnit.SECONDS);

      EtcdLeaseHistory after = s.history(late, 10);
      assertThat(after.changes()).extracting(Change::kind, Change::holder, Change::token)
          .containsExactly(org.assertj.core.groups.Tuple.tuple(Kind.GRANTED, b, gb.token()));
      assertThat(after.compactRevision()).isEqualTo(gb.token());
      assertThat(ga.token()).isLessThan(gb.token());
      EtcdLeaseHistory earlyAgain = s.history(early, 10);
      assertThat(earlyAgain.changes()).extracting(Change::kind).containsExactly(Kind.RELEASED);
      assertThat(earlyAgain.compactRevision()).isEqualTo(gb.token());
    }
  }

  @Test
  void badArgumentsAreRefusedBeforeAnythingIsSentAndAClosedStoreSaysSo() {
    EtcdLeaseStore s = store(EtcdServers.endpoints());
    s.close(); // arguments are checked first: a closed store still names the bad argument
    assertThatThrownBy(() -> s.history(null, 10)).isInstanceOf(NullPointerException.class)
        .hasMessageContaining("lease name");
    for (String bad : List.of("", " ", "x\uD800", "nul\u0000", "x".repeat(201))) {
      assertThatThrownBy(() -> s.history(bad, 10)).as("name %s", bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease name");
    }
    for (int bad : new int[] {0, -1, EtcdLeaseStore.MAX_HISTORY + 1, Integer.MIN_VALUE}) {
      assertThatThrownBy(() -> s.history("job", bad)).as("limit %s", bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("limit must be 1 to " + EtcdLeaseStore.MAX_HISTORY)
          .hasMessageContaining("got " + bad);
    }
    assertThatThrownBy(() -> s.history("job", 10)).isInstanceOf(LeaseStoreClosedException.class);
  }

  /**
   * A server that stops answering fails the call within the call timeout, and leaves no thread
   * behind once the store is closed.
   */
  @Test
  void aStalledServerFailsWithinTheCallTimeoutAndLeavesNoThreadBehind() throws Exception {
    Set<Thread> before = live();
    int port = URI.create(EtcdServers.endpointList().get(0)).getPort();
    String n = SecureEtcd.random("stall-");
    try (TcpProxy proxy = new TcpProxy(port);
        EtcdLeaseStore s = EtcdLeaseStore.builder("http://127.0.0.1:" + proxy.port())
            .keyPrefix(prefix).callTimeout(Duration.ofSeconds(1)).build()) {
      HolderId a = HolderId.generate();
      s.acquireOrRenew(n, a, Duration.ofSeconds(30)).orElseThrow();
      assertThat(s.release(n, a)).isTrue();
      assertThat(s.history(n, 10).changes()).hasSize(2);
      proxy.stall();
      for (int i = 0; i < 3; i++) {
        long start = System.nanoTime();
        assertThatThrownBy(() -> s.history(n, 10))
            .isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("read the history of lease '" + n + "'")
            .hasMessageContaining("did not answer");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      }
      proxy.forward();
      assertThat(s.history(n, 10).changes()).as("answers again").hasSize(2);
    }
    await("the threads the store and the proxy started end").atMost(Duration.ofSeconds(60))
        .until(() -> newThreads(before), List::isEmpty);
  }

  private static Set<Thread> live() {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
        .collect(Collectors.toSet());
  }

  /** Threads alive now that were not before, except the JDK's shared pools and Awaitility's. */
  private static List<String> newThreads(Set<Thread> before) {
    return live().stream().filter(t -> !before.contains(t))
        .map(Thread::getName)
        .filter(name -> !name.startsWith("ForkJoinPool") && !name.startsWith("awaitility"))
        .sorted().toList();
  }

  private static HolderId holder(KeyValue kv) {
    return new HolderId(kv.getValue().toString(StandardCharsets.UTF_8));
  }
}
