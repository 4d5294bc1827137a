package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * One session per (store, holder, TTL): a batch shares it, one renewal keeps every name alive,
 * ending it loses every name at once, and a session left without names lingers only for the
 * holder's next tenure (while it is fresh; destroyed by close). Requests are
 * counted by an HTTP proxy in front of the shared agent ({@link CountingHttpProxy}).
 */
class ConsulSharedSessionTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  private static List<String> names(int n) {
    String base = "shared-" + UUID.randomUUID() + "-";
    List<String> names = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      names.add(base + i);
    }
    return names;
  }

  private static String url() {
    return ConsulServers.sharedUrl();
  }

  private static int sessionsNamed(HolderId holder) {
    int n = 0;
    for (JsonNode s : RawHttp.get(url(), "/v1/session/list")) {
      if (s.get("Name").asText().equals(holder.value())) {
        n++;
      }
    }
    return n;
  }

  private static String sessionOf(ConsulLeaseStore s, String name) {
    JsonNode e = RawHttp.get(url(), "/v1/kv/" + s.keyOf(name));
    return e == null || !e.get(0).hasNonNull("Session") ? null : e.get(0).get("Session").asText();
  }

  @Test
  void aBatchSharesOneSessionWhichEndsWithItsLastNameAndTakesEveryNameWithIt() {
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(url()).build();
        ConsulLeaseStore other = ConsulLeaseStore.builder(url()).build()) {
      HolderId a = HolderId.generate();
      List<String> batch = names(100);
      int before = RawHttp.get(url(), "/v1/session/list").size();
      Map<String, AcquireResult> got = s.acquireOrRenewAll(batch, a, TTL);
      Set<String> sessions = new HashSet<>();
      for (String n : batch) {
        assertThat(got.get(n)).isInstanceOf(AcquireResult.Granted.class);
        sessions.add(sessionOf(s, n));
      }
      assertThat(sessions).as("every name of the batch on one session").hasSize(1);
      String single = batch.get(0) + "-single";
      s.acquireOrRenew(single, a, TTL).orElseThrow();
      assertThat(sessionOf(s, single)).as("a single acquire joins it").isIn(sessions);
      assertThat(sessionsNamed(a)).isEqualTo(1);

      // releasing every name leaves the session lingering, locking nothing, for the next tenure
      assertThat(s.releaseAll(batch, a).values()).containsOnly(true);
      assertThat(sessionsNamed(a)).as("one name is left on it").isEqualTo(1);
      assertThat(s.release(single, a)).isTrue();
      assertThat(sessionsNamed(a)).as("the last release leaves the session lingering").isEqualTo(1);
      for (String n : batch) {
        assertThat(sessionOf(s, n)).as("'%s' released: unlocked", n).isNull();
        assertThat(other.inspect(n).status()).isEqualTo(LeaseState.Status.FREE);
      }

      // shared fate: destroying the session loses every name at once; next grants are larger
      Map<String, AcquireResult> again = s.acquireOrRenewAll(batch, a, TTL);
      Map<String, Long> tokens = new java.util.HashMap<>();
      again.forEach((n, r) -> tokens.put(n, r.grant().orElseThrow().token()));
      String session = sessionOf(s, batch.get(0));
      RawHttp.put(url(), "/v1/session/destroy/" + session, "");
      for (String n : batch) {
        assertThat(other.inspect(n).status()).as("'%s' after its session was destroyed", n)
            .isEqualTo(LeaseState.Status.EXPIRED);
      }
      Map<String, AcquireResult> renewed = s.acquireOrRenewAll(batch, a, TTL);
      for (String n : batch) {
        assertThat(renewed.get(n).grant().orElseThrow().token())
            .as("'%s': a new tenure, never the old token", n).isGreaterThan(tokens.get(n));
      }
      assertThat(sessionOf(s, batch.get(0))).as("on a new session").isNotEqualTo(session);
      s.releaseAll(batch, a);
      assertThat(sessionsNamed(a)).as("lingering").isEqualTo(1);

      // closing destroys sessions left without names, and keeps those with names (they expire)
      s.acquireOrRenew(single, a, Duration.ofSeconds(2)).orElseThrow();
      assertThat(sessionsNamed(a)).isEqualTo(2);
      s.close();
      assertThat(sessionsNamed(a)).as("closing releases nothing").isEqualTo(1);
      assertThat(RawHttp.get(url(), "/v1/session/list").size()).isLessThanOrEqualTo(before + 1);
      await("the closed store's session expires by its TTL").atMost(Duration.ofSeconds(20))
          .until(() -> sessionsNamed(a) == 0);
    }
  }

  /**
   * A renewal round of 10,000 names costs a fixed number of requests (one session renewal, one
   * read), and acquiring them one per 32 names; prints the figures.
   */
  @Test
  void tenThousandNamesAcquireInFewRequestsAndRenewInTwo() throws Exception {
    try (CountingHttpProxy proxy = new CountingHttpProxy(url());
        ConsulLeaseStore s = ConsulLeaseStore.builder(proxy.url())
            .callTimeout(Duration.ofSeconds(60)).build()) {
      HolderId a = HolderId.generate();
      List<String> names = names(LeaseStore.MAX_BATCH_SIZE);
      long r0 = proxy.requests();
      long t0 = System.nanoTime();
      Map<String, AcquireResult> got = s.acquireOrRenewAll(names, a, TTL);
      long acquireMs = (System.nanoTime() - t0) / 1_000_000;
      long acquireRequests = proxy.requests() - r0;
      assertThat(got.values()).allMatch(r -> r instanceof AcquireResult.Granted);
      assertThat(acquireRequests).as("1 read, 1 session, one transaction per 32 names")
          .isLessThanOrEqualTo(2 + (names.size() + 31) / 32);

      long r1 = proxy.requests();
      long t1 = System.nanoTime();
      Map<String, AcquireResult> renewed = s.acquireOrRenewAll(names, a, TTL);
      long renewMs = (System.nanoTime() - t1) / 1_000_000;
      long renewRequests = proxy.requests() - r1;
      for (String n : names) {
        assertThat(renewed.get(n).grant().orElseThrow().token())
            .isEqualTo(got.get(n).grant().orElseThrow().token());
      }
      assertThat(renewRequests).as("one session renewal and one read of every key").isEqualTo(2);

      long r2 = proxy.requests();
      long t2 = System.nanoTime();
      assertThat(s.releaseAll(names, a).values()).containsOnly(true);
      long releaseMs = (System.nanoTime() - t2) / 1_000_000;
      long releaseRequests = proxy.requests() - r2;
      System.out.printf("BATCH 10000 names: acquire %d requests %d ms; renew %d requests %d ms;"
          + " release %d requests %d ms%n", acquireRequests, acquireMs, renewRequests, renewMs,
          releaseRequests, releaseMs);
      assertThat(sessionsNamed(a)).as("lingering after the last release").isEqualTo(1);
      s.close();
      assertThat(sessionsNamed(a)).as("destroyed by close").isZero();
    }
  }

  /**
   * After the holder's last release its session lingers, locking nothing: the holder's next fresh
   * acquire is one transaction on it with a session renewal sent in parallel (no read, no session
   * created), while the released name is FREE; closing the store destroys the session.
   */
  @Test
  void aFreshAcquireAfterTheLastReleaseIsOneRoundTripOnTheLingeringSession() throws Exception {
    try (CountingHttpProxy proxy = new CountingHttpProxy(url());
        ConsulLeaseStore s = ConsulLeaseStore.builder(proxy.url()).build();
        ConsulLeaseStore observer = ConsulLeaseStore.builder(url()).build()) {
      HolderId a = HolderId.generate();
      List<String> two = names(2);
      s.acquireOrRenew(two.get(0), a, TTL).orElseThrow();
      String session = sessionOf(s, two.get(0));
      assertThat(s.release(two.get(0), a)).isTrue();
      assertThat(sessionOf(s, two.get(0))).as("the released key is unlocked").isNull();
      assertThat(observer.inspect(two.get(0)).status()).isEqualTo(LeaseState.Status.FREE);
      assertThat(sessionsNamed(a)).as("the session lingers").isEqualTo(1);
      proxy.kindsAndReset();

      LeaseGrant g = s.acquireOrRenew(two.get(1), a, TTL).orElseThrow();

      assertThat(proxy.kindsAndReset()).as("requests of a fresh acquire after the last release")
          .isEqualTo(Map.of("PUT /v1/session/renew", 1L, "PUT /v1/txn", 1L));
      assertThat(sessionOf(s, two.get(1))).as("on the lingering session").isEqualTo(session);
      assertThat(g.ttl()).isEqualTo(TTL);
      assertThat(s.release(two.get(1), a)).isTrue();
      s.close();
      assertThat(sessionsNamed(a)).as("closing destroys the lingering session").isZero();
    }
  }

  /**
   * A holder with a session takes over a name that another holder released, or whose session
   * Consul invalidated, in one transaction with its session renewal in parallel — no read first,
   * as for a fresh name — and the key is created afresh, so the token grows. A name that another
   * session still locks rolls that transaction back: refused, the holder and token unchanged.
   */
  @Test
  void aTakeoverOfAReleasedOrExpiredNameIsOneRoundTripForAHolderWithASession() throws Exception {
    try (CountingHttpProxy proxy = new CountingHttpProxy(url());
        ConsulLeaseStore b = ConsulLeaseStore.builder(proxy.url()).build();
        ConsulLeaseStore a = ConsulLeaseStore.builder(url()).build()) {
      HolderId ha = HolderId.generate();
      HolderId hb = HolderId.generate();
      List<String> n = names(3);
      b.acquireOrRenew(n.get(0), hb, TTL).orElseThrow(); // b's session, live

      LeaseGrant held = a.acquireOrRenew(n.get(1), ha, TTL).orElseThrow();
      proxy.kindsAndReset();
      assertThat(b.acquireOrRenew(n.get(1), hb, TTL)).as("a name another session locks").isEmpty();
      assertThat(proxy.kindsAndReset()).as("a refusal: one transaction, rolled back")
          .containsEntry("PUT /v1/txn", 1L);
      LeaseState still = b.inspect(n.get(1));
      assertThat(still).isInstanceOf(LeaseState.Held.class);
      assertThat(((LeaseState.Held) still).holder()).isEqualTo(ha);
      assertThat(still.lastToken()).isEqualTo(held.token());
      assertThat(a.acquireOrRenew(n.get(1), ha, TTL).orElseThrow().token())
          .as("the holder's renewal after the refusal").isEqualTo(held.token());

      assertThat(a.release(n.get(1), ha)).isTrue();
      proxy.kindsAndReset();
      LeaseGrant taken = b.acquireOrRenew(n.get(1), hb, TTL).orElseThrow();
      assertThat(proxy.kindsAndReset()).as("requests of a takeover after a release")
          .isEqualTo(Map.of("PUT /v1/session/renew", 1L, "PUT /v1/txn", 1L));
      assertThat(taken.token()).isGreaterThan(held.token());
      assertThat(sessionOf(b, n.get(1))).isEqualTo(sessionOf(b, n.get(0)));
      LeaseState now = a.inspect(n.get(1));
      assertThat(((LeaseState.Held) now).holder()).isEqualTo(hb);
      assertThat(now.lastToken()).isEqualTo(taken.token());

      Duration shortest = a.ttlRange().roundUp(a.ttlRange().min());
      LeaseGrant lapsed = a.acquireOrRenew(n.get(2), ha, shortest).orElseThrow();
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> a.inspect(n.get(2)) instanceof LeaseState.Expired);
      proxy.kindsAndReset();
      LeaseGrant afterExpiry = b.acquireOrRenew(n.get(2), hb, TTL).orElseThrow();
      assertThat(proxy.kindsAndReset()).as("requests of a takeover after an expiry")
          .isEqualTo(Map.of("PUT /v1/session/renew", 1L, "PUT /v1/txn", 1L));
      assertThat(afterExpiry.token()).isGreaterThan(lapsed.token());
      assertThat(a.acquireOrRenew(n.get(2), ha, shortest)).as("the expired holder").isEmpty();

      assertThat(b.release(n.get(0), hb)).isTrue();
      assertThat(b.release(n.get(1), hb)).isTrue();
      assertThat(b.release(n.get(2), hb)).isTrue();
    }
  }

  /**
   * A lingering session is used for a new tenure only while at least half its TTL is left by its
   * last renewal: after that the next acquire creates a new session and the old one is destroyed.
   */
  @Test
  void aLingeringSessionPastHalfItsTtlIsReplacedAndDestroyed() {
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(url()).build()) {
      HolderId a = HolderId.generate();
      List<String> two = names(2);
      Duration ttl = Duration.ofSeconds(4);
      s.acquireOrRenew(two.get(0), a, ttl).orElseThrow();
      String session = sessionOf(s, two.get(0));
      long released = System.nanoTime();
      assertThat(s.release(two.get(0), a)).isTrue();
      await("half the TTL passes").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
          .until(() -> System.nanoTime() - released > ttl.toNanos() / 2);

      s.acquireOrRenew(two.get(1), a, ttl).orElseThrow();

      assertThat(sessionOf(s, two.get(1))).as("a new session").isNotEqualTo(session);
      await("the stale session is destroyed").atMost(Duration.ofSeconds(5))
          .until(() -> {
            JsonNode info = RawHttp.get(url(), "/v1/session/info/" + session);
            return info == null || info.isEmpty();
          });
      s.release(two.get(1), a);
    }
  }

  /**
   * Why a renewal's check follows its session renewal (two round trips): the key is deleted by hand
   * and locked by another holder while A's session renewal is on its way to Consul, held by the
   * proxy. A check sent alongside the renewal would pass before that (the hook first lets a check
   * through if one comes within a second; the sequential renewal sends none until its renewal is
   * answered). A's renewal must report the lease lost: a renewal that extends a session after
   * another holder was granted the name is never a grant.
   */
  @Test
  void aKeyDeletedAndTakenWhileTheSessionRenewalIsInFlightIsNotRenewed() throws Exception {
    try (CountingHttpProxy proxy = new CountingHttpProxy(url());
        ConsulLeaseStore s = ConsulLeaseStore.builder(proxy.url())
            .callTimeout(Duration.ofSeconds(20)).build();
        ConsulLeaseStore other = ConsulLeaseStore.builder(url()).build()) {
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      String n = names(1).get(0);
      LeaseGrant ga = s.acquireOrRenew(n, a, TTL).orElseThrow();
      java.util.concurrent.atomic.AtomicReference<LeaseGrant> gb =
          new java.util.concurrent.atomic.AtomicReference<>();
      long txns = proxy.answered("PUT /v1/txn");
      proxy.beforeNext("PUT /v1/session/renew", () -> {
        try {
          await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(5))
              .until(() -> proxy.answered("PUT /v1/txn") > txns);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
          // no check sent alongside the renewal: as it should be
        }
        RawHttp.call(url(), "DELETE", "/v1/kv/" + s.keyOf(n));
        gb.set(other.acquireOrRenew(n, b, TTL).orElseThrow());
      });

      java.util.Optional<LeaseGrant> renewed = s.acquireOrRenew(n, a, TTL);

      assertThat(gb.get()).as("the hook ran: B was granted during A's renewal").isNotNull();
      assertThat(gb.get().token()).isGreaterThan(ga.token());
      assertThat(renewed).as("A's renewal after B was granted token %d", gb.get().token())
          .isEmpty();
      assertThat(other.inspect(n)).isInstanceOfSatisfying(LeaseState.Held.class,
          h -> assertThat(h.holder()).isEqualTo(b));
      other.release(n, b);
    }
  }

  /** A renewal that finds its key deleted and locked by another session reports it lost. */
  @Test
  void aRenewalAfterTheKeyWasDeletedAndTakenByAnotherSessionIsNotReported() {
    try (ConsulLeaseStore s = ConsulLeaseStore.builder(url()).build();
        ConsulLeaseStore other = ConsulLeaseStore.builder(url()).build()) {
      HolderId a = HolderId.generate();
      HolderId b = HolderId.generate();
      List<String> batch = names(3);
      s.acquireOrRenewAll(batch, a, TTL);
      RawHttp.call(url(), "DELETE", "/v1/kv/" + s.keyOf(batch.get(1)));
      LeaseGrant gb = other.acquireOrRenew(batch.get(1), b, TTL).orElseThrow();
      assertThat(s.acquireOrRenew(batch.get(1), a, TTL)).isEmpty();
      Map<String, AcquireResult> round = s.acquireOrRenewAll(batch, a, TTL);
      assertThat(round.get(batch.get(1))).isInstanceOf(AcquireResult.Refused.class);
      LeaseState.Held by = ((AcquireResult.Refused) round.get(batch.get(1))).heldBy().orElseThrow();
      assertThat(by.holder()).isEqualTo(b);
      assertThat(by.lastToken()).isEqualTo(gb.token());
      assertThat(round.get(batch.get(0))).isInstanceOf(AcquireResult.Granted.class);
      assertThat(round.get(batch.get(2))).isInstanceOf(AcquireResult.Granted.class);
      s.releaseAll(batch, a);
      other.release(batch.get(1), b);
    }
  }
}
