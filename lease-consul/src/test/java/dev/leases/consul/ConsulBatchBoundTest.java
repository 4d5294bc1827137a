package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.util.bookend.ConsulBookend;
import org.kiwiproject.consul.util.bookend.ConsulBookendContext;

/**
 * A batch's bound covers the steps it takes one after another. A batch of new names is at least a
 * session, a read and a wave of transactions; on an agent that answers each request slowly (here
 * 350 ms, each request well within the 1 s call timeout) the three together take longer than one
 * call timeout, which once was a batch's whole bound: four holders' batches of the same 250 names
 * on a loaded 2-core machine then timed out.
 */
class ConsulBatchBoundTest {

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);
  private static final long DELAY_MS = 350;

  @Test
  void aBatchOfNewNamesOnASlowAgentIsAnsweredWhenEachOfItsRequestsIsInTime() {
    AtomicBoolean slow = new AtomicBoolean();
    AtomicInteger delayed = new AtomicInteger();
    Consul client = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false)
        .withConsulBookend(new ConsulBookend() {
          @Override
          public void pre(String url, ConsulBookendContext context) {
            if (slow.get()) {
              delayed.incrementAndGet();
              try {
                Thread.sleep(DELAY_MS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }

          @Override
          public void post(int code, ConsulBookendContext context) {}
        }).build();
    try (ConsulLeaseStore store = ConsulLeaseStore.builder(client).keyPrefix(
        "batch-bound-" + UUID.randomUUID()).callTimeout(CALL_TIMEOUT).build()) {
      // warm: a first batch of another holder's, on the fast agent
      store.acquireOrRenewAll(List.of("warm-a", "warm-b"), HolderId.generate(),
          Duration.ofSeconds(10));
      slow.set(true);
      HolderId holder = HolderId.generate();
      Map<String, AcquireResult> answers = store.acquireOrRenewAll(List.of("a", "b", "c"), holder,
          Duration.ofSeconds(10));
      assertThat(delayed.get()).as("requests the batch sent, each %d ms late", DELAY_MS)
          .isGreaterThanOrEqualTo(3);
      assertThat(answers.values()).allSatisfy(a -> assertThat(a)
          .isInstanceOf(AcquireResult.Granted.class));
    } finally {
      client.destroy();
    }
  }
}
