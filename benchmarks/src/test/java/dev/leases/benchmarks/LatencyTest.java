package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.process.StoreRecipe;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The order of a latency sample: every timed run of calls on a connection follows an untimed call
 * on the same connection (an inspection before the acquire, a plain write before the plain write),
 * so that no timed call, the baseline included, pays for waking its connection after the other's.
 */
class LatencyTest {

  @Test
  void eachTimedRunOfCallsFollowsAnUntimedCallOnTheSameConnection() throws Exception {
    List<String> calls = Collections.synchronizedList(new ArrayList<>());
    try (InMemoryLeaseStore mem = new InMemoryLeaseStore()) {
      Latency.Result r = Latency.run(recorded(mem, calls), 2, Latency.Warmup.exactly(1), "order");
      assertThat(r.micros()).containsKeys(Latency.FRESH, Latency.RENEW, Latency.TAKEOVER,
          Latency.PLAIN);
      assertThat(r.warmupRounds()).isEqualTo(1);
      List<String> three = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        three.addAll(SAMPLE);
      }
      assertThat(calls).isEqualTo(three);
    }
  }

  /**
   * The warm-up goes on past its minimum until its time or its cap of rounds is spent, so that the
   * JIT has compiled the store's code before anything is timed (after 50 rounds it had not).
   */
  @Test
  void warmupRunsOnPastItsMinimumUntilItsCapOrItsTime() throws Exception {
    List<String> calls = Collections.synchronizedList(new ArrayList<>());
    try (InMemoryLeaseStore mem = new InMemoryLeaseStore()) {
      Latency.Result capped = Latency.run(recorded(mem, calls), 2,
          new Latency.Warmup(1, 40, Duration.ofMinutes(5)), "capped");
      assertThat(capped.warmupRounds()).isEqualTo(40);
      assertThat(calls).hasSize(42 * SAMPLE.size());
      assertThat(capped.micros().get(Latency.RENEW)).hasSize(2);

      calls.clear();
      Latency.Result timed = Latency.run(recorded(mem, calls), 2,
          new Latency.Warmup(3, 1_000_000, Duration.ZERO), "timed");
      assertThat(timed.warmupRounds()).isEqualTo(3);
      assertThat(calls).hasSize(5 * SAMPLE.size());
    }
  }

  private static final List<String> SAMPLE = List.of("inspect", "acquireOrRenew",
      "acquireOrRenew", "acquireOrRenew", "release", "acquireOrRenew", "release", "plain", "plain");

  /** The in-memory store and a no-op plain write, every call noted in {@code calls}. */
  private static Backend recorded(InMemoryLeaseStore mem, List<String> calls) {
    return new Backend() {
      @Override
      public String name() {
        return "recorded";
      }

      @Override
      public String description() {
        return "the in-memory store, its calls recorded";
      }

      @Override
      public LeaseStore openStore() {
        return new ForwardingLeaseStore(mem.newClient()) {
          @Override
          public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder,
              Duration ttl) {
            calls.add("acquireOrRenew");
            return super.acquireOrRenew(name, holder, ttl);
          }

          @Override
          public boolean release(String name, HolderId holder) {
            calls.add("release");
            return super.release(name, holder);
          }

          @Override
          public LeaseState inspect(String name) {
            calls.add("inspect");
            return super.inspect(name);
          }
        };
      }

      @Override
      public StoreRecipe recipe() {
        throw new UnsupportedOperationException("no worker JVMs here");
      }

      @Override
      public Compared compared() throws Exception {
        return Compared.of(openStore(), () -> new PlainWrite() {
          @Override
          public String what() {
            return "a recorded no-op";
          }

          @Override
          public void write(String key, long value) {
            calls.add("plain");
          }
        });
      }

      @Override
      public void close() {}
    };
  }
}
