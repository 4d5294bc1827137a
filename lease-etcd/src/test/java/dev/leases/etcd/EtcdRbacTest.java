package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * etcd RBAC against a real server with authentication enabled ({@link SecureEtcd#withAuth()}): the
 * roles of {@link EtcdRoles} are enough and no more — a holder confined to its prefix, an observer
 * that reads but cannot write — and every refusal is an {@link EtcdAccessDeniedException} that
 * names the user and the key range.
 */
class EtcdRbacTest {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(5);

  private static SecureEtcd etcd;
  private static String prefixA;
  private static String prefixB;
  private static String holder;
  private static String observer;
  private static String password;

  @BeforeAll
  static void users() throws Exception {
    etcd = SecureEtcd.withAuth();
    prefixA = SecureEtcd.random("rbac-a-");
    prefixB = SecureEtcd.random("rbac-b-");
    holder = SecureEtcd.random("holder-");
    observer = SecureEtcd.random("observer-");
    password = SecureEtcd.random("pw-");
    EtcdRoles.apply(etcd.admin(), prefixA, holder + "-role", EtcdRoles.Access.HOLDER, CALL_TIMEOUT);
    EtcdRoles.apply(etcd.admin(), prefixA, observer + "-role", EtcdRoles.Access.OBSERVER,
        CALL_TIMEOUT);
    // idempotent: a second apply changes nothing and does not fail
    EtcdRoles.apply(etcd.admin(), prefixA, observer + "-role", EtcdRoles.Access.OBSERVER,
        CALL_TIMEOUT);
    etcd.addUser(holder, password);
    EtcdRoles.grant(etcd.admin(), holder, holder + "-role", CALL_TIMEOUT);
    etcd.addUser(observer, password, observer + "-role");
  }

  private static EtcdLeaseStore store(String user, String prefix) {
    return EtcdLeaseStore.builder(etcd.endpoint).user(user, password).keyPrefix(prefix)
        .callTimeout(CALL_TIMEOUT).build();
  }

  @Test
  void anObserverReadsInspectsAndWatchesButEveryWriteIsDeniedByName() throws Exception {
    String name = SecureEtcd.random("watched-");
    HolderId h = HolderId.generate();
    try (LeaseStore holderStore = store(holder, prefixA);
        EtcdLeaseStore observerStore = store(observer, prefixA)) {
      LeaseGrant g = holderStore.acquireOrRenew(name, h, TTL).orElseThrow();
      assertThat(observerStore.inspect(name)).isInstanceOfSatisfying(LeaseState.Held.class,
          held -> assertThat(held.lastToken()).isEqualTo(g.token()));
      assertThat(observerStore.token(name)).hasValue(g.token());
      AtomicBoolean released = new AtomicBoolean();
      try (LeaseStore.Subscription s = observerStore.onRelease(name, () -> released.set(true))) {
        assertThat(holderStore.release(name, h)).isTrue();
        await().atMost(Duration.ofSeconds(30)).untilTrue(released);
      }
      assertThat(observerStore.inspect(name)).isInstanceOf(LeaseState.Free.class);

      for (Runnable write : List.<Runnable>of(
          () -> observerStore.acquireOrRenew(name, HolderId.generate(), TTL),
          () -> observerStore.acquireOrRenewAll(List.of(name, name + "-2"), HolderId.generate(),
              TTL))) {
        assertThatThrownBy(write::run).isInstanceOf(EtcdAccessDeniedException.class)
            .hasMessageContaining("etcd user '" + observer + "' lacks permission")
            .hasMessageContaining("'" + prefixA + "/'").hasMessageContaining("readwrite");
      }
      // a release by the observer, under the holder's id, of a name the holder has
      holderStore.acquireOrRenew(name, h, TTL).orElseThrow();
      assertThatThrownBy(() -> observerStore.release(name, h))
          .isInstanceOf(EtcdAccessDeniedException.class)
          .hasMessageContaining(observer).hasMessageContaining("release '" + name + "'");
      assertThat(observerStore.inspect(name)).isInstanceOf(LeaseState.Held.class);
      assertThat(holderStore.release(name, h)).isTrue();
      assertThat(observerStore.history(name, 10).changes()).as("history needs read only")
          .extracting(EtcdLeaseHistory.Change::kind).containsExactly(EtcdLeaseHistory.Kind.RELEASED,
              EtcdLeaseHistory.Kind.GRANTED, EtcdLeaseHistory.Kind.RELEASED,
              EtcdLeaseHistory.Kind.GRANTED);
    }
  }

  @Test
  void aHolderConfinedToOnePrefixCannotTouchAnotherPrefixsLeases() throws Exception {
    String name = SecureEtcd.random("other-");
    try (EtcdLeaseStore wrongPrefix = store(holder, prefixB)) {
      assertThatThrownBy(() -> wrongPrefix.acquireOrRenew(name, HolderId.generate(), TTL))
          .isInstanceOf(EtcdAccessDeniedException.class).hasMessageContaining(holder)
          .hasMessageContaining("'" + prefixB + "/'");
      assertThatThrownBy(() -> wrongPrefix.inspect(name))
          .isInstanceOf(EtcdAccessDeniedException.class).hasMessageContaining(holder);
      assertThatThrownBy(() -> wrongPrefix.token(name))
          .isInstanceOf(EtcdAccessDeniedException.class);
      assertThatThrownBy(() -> wrongPrefix.history(name, 10))
          .isInstanceOf(EtcdAccessDeniedException.class).hasMessageContaining(holder)
          .hasMessageContaining("read the history of lease '" + name + "'");
      assertThatThrownBy(() -> wrongPrefix.release(name, HolderId.generate()))
          .isInstanceOf(EtcdAccessDeniedException.class);
    }
    try (var ledger = EtcdRunLedger.builder(etcd.endpoint).user(holder, password)
        .keyPrefix(prefixB).build()) {
      assertThatThrownBy(() -> ledger.completion("job", "run"))
          .isInstanceOf(EtcdAccessDeniedException.class).hasMessageContaining(holder);
    }
  }

  @Test
  void theHoldersRoleCoversTheRunLedgerAndTheFenceKeys() throws Exception {
    String job = SecureEtcd.random("job-");
    HolderId h = HolderId.generate();
    try (EtcdLeaseStore store = store(holder, prefixA);
        EtcdRunLedger ledger = EtcdRunLedger.builder(etcd.endpoint).user(holder, password)
            .keyPrefix(prefixA).build()) {
      LeaseGrant g = store.acquireOrRenew(job, h, TTL).orElseThrow();
      var attempt = ledger.begin(job, "r1", g.token(), h);
      ledger.complete(attempt, none -> {});
      assertThat(ledger.completion(job, "r1")).isPresent();
    }
  }

  @Test
  void theStoresFenceUsesItsCredentialsAndNeedsWriteOnTheGuardedKeysToo() throws Exception {
    String name = SecureEtcd.random("fenced-");
    String resource = prefixA + "-data/" + name;
    HolderId h = HolderId.generate();
    try (EtcdLeaseStore store = store(holder, prefixA)) {
      long token = store.acquireOrRenew(name, h, TTL).orElseThrow().token();
      assertThatThrownBy(() -> store.fence().write(resource, token, "v"))
          .isInstanceOf(EtcdAccessDeniedException.class).hasMessageContaining(holder)
          .hasMessageContaining("guarded resource keys");
      var auth = etcd.admin().getAuthClient();
      etcd.adminCall(() -> auth.roleGrantPermission(SecureEtcd.utf8(holder + "-role"),
          SecureEtcd.utf8(prefixA + "-data/"), SecureEtcd.utf8(prefixA + "-data0"),
          io.etcd.jetcd.auth.Permission.Type.WRITE));
      assertThat(store.fence().write(resource, token, "v")).isPositive();
      assertThat(store.fence().highestToken(resource)).hasValue(token);
    }
  }

  @Test
  void wrongOrMissingCredentialsAreDeniedAtOnceNotUnavailable() {
    try (LeaseStore wrong = EtcdLeaseStore.builder(etcd.endpoint).user(holder, password + "x")
        .keyPrefix(prefixA).callTimeout(Duration.ofSeconds(20)).build()) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> wrong.inspect("x")).isInstanceOf(EtcdAccessDeniedException.class)
          .hasMessageContaining("rejected the credentials of etcd user '" + holder + "'");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
    }
    try (LeaseStore anonymous = EtcdLeaseStore.builder(etcd.endpoint).keyPrefix(prefixA).build()) {
      assertThatThrownBy(() -> anonymous.acquireOrRenew("x", HolderId.generate(), TTL))
          .isInstanceOf(EtcdAccessDeniedException.class)
          .hasMessageContaining("authentication enabled").hasMessageContaining("user(");
    }
  }

  /**
   * etcd drops an auth token after {@code --auth-token-ttl} of idleness (here 2 s); the next call
   * must authenticate again, not fail. The idle wait is the scenario itself.
   */
  @Test
  void callsAfterTheAuthTokenExpiredAuthenticateAgain() throws Exception {
    String name = SecureEtcd.random("idle-");
    HolderId h = HolderId.generate();
    try (LeaseStore store = store(holder, prefixA)) {
      LeaseGrant first = store.acquireOrRenew(name, h, Duration.ofSeconds(30)).orElseThrow();
      for (int i = 0; i < 2; i++) {
        Thread.sleep(SecureEtcd.AUTH_TOKEN_TTL_SECONDS * 2000L);
        assertThat(store.acquireOrRenew(name, h, Duration.ofSeconds(30)))
            .hasValueSatisfying(g -> assertThat(g.token()).isEqualTo(first.token()));
        Thread.sleep(SecureEtcd.AUTH_TOKEN_TTL_SECONDS * 2000L);
        assertThat(store.inspect(name)).isInstanceOf(LeaseState.Held.class);
      }
      assertThat(store.release(name, h)).isTrue();
    }
    // the administrator's client has been idle too: EtcdRoles renews its token
    EtcdRoles.apply(etcd.admin(), prefixA, observer + "-role", EtcdRoles.Access.OBSERVER,
        CALL_TIMEOUT);
  }

  @Test
  void theRolesCommandsAreTheEtcdctlLinesOfTheGrants() {
    assertThat(EtcdRoles.roleCommands("myapp/leases", "myapp-holder", EtcdRoles.Access.HOLDER))
        .containsExactly("etcdctl role add myapp-holder",
            "etcdctl role grant-permission --prefix=true myapp-holder readwrite myapp/leases/");
    assertThat(EtcdRoles.roleCommands("myapp/leases", "myapp-observer",
        EtcdRoles.Access.OBSERVER)).last().isEqualTo(
            "etcdctl role grant-permission --prefix=true myapp-observer read myapp/leases/");
    assertThat(EtcdRoles.grantCommand("app", "myapp-holder"))
        .isEqualTo("etcdctl user grant-role app myapp-holder");
    assertThatThrownBy(() -> EtcdRoles.grantCommand("app; rm -rf /", "r"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("A-Z a-z 0-9");
  }
}
