package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.tck.servers.TcpProxy;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.kiwiproject.consul.Consul;

/**
 * A Consul brown-out: the agent stops answering (a stalled TCP proxy) while callers keep calling.
 * Every call must fail within its bound, and the calls it abandons must not pile up threads.
 */
class ConsulBoundedCallsTest {

  private static final Duration CALL_TIMEOUT = Duration.ofMillis(300);
  /** A call's bound as the caller sees it, with room for a loaded machine. */
  private static final Duration CALL_BOUND = CALL_TIMEOUT.plusSeconds(2);
  /** Threads a store may own: its call pool, plus a few for hints and timers. */
  private static final int THREAD_BOUND = ConsulLeaseStore.DEFAULT_MAX_CONCURRENT_CALLS + 4;
  private static final int CALLERS = 40;
  private static final int CALLS_PER_CALLER = 5;

  private static int storeThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().startsWith("leases-consul-")) {
        n++;
      }
    }
    return n;
  }

  /**
   * {@code owned}: a store built from a URL (its HTTP client's timeouts are the store's);
   * {@code yours}: a store on a client with OkHttp's default 10 s read timeout, whose abandoned
   * requests the store cannot end early.
   */
  @ParameterizedTest
  @ValueSource(strings = {"owned", "yours"})
  void callsToAStalledAgentFailWithinTheirBoundWithoutPilingUpThreads(String client)
      throws Exception {
    int baseline = storeThreads();
    try (TcpProxy proxy = new TcpProxy(URI.create(ConsulServers.sharedUrl()).getPort())) {
      String url = "http://127.0.0.1:" + proxy.port();
      Consul yours = client.equals("yours")
          ? Consul.builder().withUrl(url).withPing(false).build() : null;
      try (ConsulLeaseStore s = (yours != null ? ConsulLeaseStore.builder(yours)
          : ConsulLeaseStore.builder(url)).callTimeout(CALL_TIMEOUT).build()) {
        HolderId h = HolderId.generate();
        await("works before the stall (a cold JVM's first calls may take longer)")
            .atMost(Duration.ofSeconds(30))
            .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
            .until(() -> s.acquireOrRenew("warm-" + UUID.randomUUID(), h, Duration.ofSeconds(2))
                .isPresent());
        proxy.stall();

        AtomicInteger peak = new AtomicInteger();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
          while (sampling.get()) {
            peak.accumulateAndGet(storeThreads() - baseline, Math::max);
            try {
              Thread.sleep(5);
            } catch (InterruptedException e) {
              return;
            }
          }
        }, "thread-sampler");
        sampler.start();

        ConcurrentLinkedQueue<String> unexpected = new ConcurrentLinkedQueue<>();
        AtomicInteger failedInTime = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(CALLERS);
        List<Thread> callers = new ArrayList<>();
        for (int c = 0; c < CALLERS; c++) {
          Thread t = new Thread(() -> {
            try {
              for (int i = 0; i < CALLS_PER_CALLER; i++) {
                long start = System.nanoTime();
                try {
                  Optional<?> g = s.acquireOrRenew("stalled-" + UUID.randomUUID(),
                      HolderId.generate(), Duration.ofSeconds(2));
                  unexpected.add("answered " + g + " while stalled");
                } catch (LeaseStoreUnavailableException e) {
                  Duration took = Duration.ofNanos(System.nanoTime() - start);
                  if (took.compareTo(CALL_BOUND) < 0) {
                    failedInTime.incrementAndGet();
                  } else {
                    unexpected.add("failed after " + took + ": " + e.getMessage());
                  }
                } catch (RuntimeException e) {
                  unexpected.add(e.toString());
                }
              }
            } finally {
              done.countDown();
            }
          }, "caller-" + c);
          callers.add(t);
          t.start();
        }
        assertThat(done.await(2, TimeUnit.MINUTES)).as("every caller finished").isTrue();
        assertThat(unexpected).as("every call fails with LeaseStoreUnavailableException in time")
            .isEmpty();
        assertThat(failedInTime.get()).isEqualTo(CALLERS * CALLS_PER_CALLER);
        sampling.set(false);
        sampler.join();
        System.out.printf("%s client: %d calls failed in time, peak %d store threads%n", client,
            failedInTime.get(), peak.get());
        assertThat(peak.get()).as("threads the store owned at the peak of the stall")
            .isLessThanOrEqualTo(THREAD_BOUND);

        proxy.forward();
        await("the store works again once the agent answers").atMost(Duration.ofSeconds(60))
            .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
            .until(() -> s.acquireOrRenew("after-" + UUID.randomUUID(), h, Duration.ofSeconds(2))
                .isPresent());
        assertThat(storeThreads() - baseline).as("threads the store owns after the stall")
            .isLessThanOrEqualTo(THREAD_BOUND);
      } finally {
        if (yours != null) {
          yours.destroy();
        }
      }
    }
  }
}
