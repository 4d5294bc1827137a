package dev.leases.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.LeaseStoreClosedException;
import dev.leases.time.ManualClock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The reference store on a manual clock: expiry without sleeping, as users would test with it. */
class InMemoryLeaseStoreTest {

  private final ManualClock clock = new ManualClock();
  private final InMemoryLeaseStore store = new InMemoryLeaseStore(clock);
  private final HolderId a = HolderId.generate();
  private final HolderId b = HolderId.generate();
  private final Duration ttl = Duration.ofSeconds(10);

  @Test
  void expiryIsJudgedByTheStoreClock() {
    long t1 = store.acquireOrRenew("job", a, ttl).orElseThrow().token();
    clock.advance(ttl.minusMillis(1));
    assertThat(store.acquireOrRenew("job", b, ttl)).isEmpty();
    clock.advance(Duration.ofMillis(1));
    assertThat(store.inspect("job")).isInstanceOf(LeaseState.Expired.class);
    assertThat(store.acquireOrRenew("job", b, ttl).orElseThrow().token()).isGreaterThan(t1);
  }

  @Test
  void wallClockJumpsDoNotMoveExpiry() {
    store.acquireOrRenew("job", a, ttl).orElseThrow();
    clock.jumpWall(Duration.ofHours(5));
    assertThat(store.acquireOrRenew("job", b, ttl)).isEmpty();
    assertThat(((LeaseState.Held) store.inspect("job")).remaining()).isEqualTo(ttl);
  }

  @Test
  void releaseNotifiesSubscribersAndKeepsTheToken() {
    AtomicInteger woken = new AtomicInteger();
    InMemoryLeaseStore other = store.newClient();
    other.onRelease("job", woken::incrementAndGet);
    long t1 = store.acquireOrRenew("job", a, ttl).orElseThrow().token();
    assertThat(store.release("job", a)).isTrue();
    assertThat(woken.get()).isEqualTo(1);
    assertThat(other.token("job")).hasValue(t1);
  }

  @Test
  void closingOneHandleLeavesTheOthersWorking() {
    InMemoryLeaseStore other = store.newClient();
    other.close();
    assertThatThrownBy(() -> other.inspect("job")).isInstanceOf(LeaseStoreClosedException.class);
    assertThat(store.inspect("job").status()).isEqualTo(LeaseState.Status.FREE);
  }
}
