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
      Backend backend = new Backend() {
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
        public PlainWrite plainWrite() {
          return new PlainWrite() {
            @Override
            public String what() {
              return "a recorded no-op";
            }

            @Override
            public void write(String key, long value) {
              calls.add("plain");
            }
          };
        }

        @Override
        public void close() {}
      };
      Latency.Result r = Latency.run(backend, 2, 1, "order");
      assertThat(r.micros()).containsKeys(Latency.FRESH, Latency.RENEW, Latency.PLAIN);
      List<String> sample = List.of("inspect", "acquireOrRenew", "acquireOrRenew",
          "acquireOrRenew", "release", "plain", "plain");
      List<String> three = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        three.addAll(sample);
      }
      assertThat(calls).isEqualTo(three);
    }
  }
}
