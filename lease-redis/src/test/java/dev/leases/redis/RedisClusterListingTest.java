package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.tck.LeaseListingTck;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The listing kit on a real Redis Cluster of three primaries (a third of the slots each), through
 * a cluster client: a name's keys live on the primary of its tag's slot, so a listing must scan
 * every primary.
 */
class RedisClusterListingTest extends LeaseListingTck {

  private static final int[][] SLOTS = {{0, 5460}, {5461, 10922}, {10923, 16383}};
  private static final List<RedisProcess> nodes = new ArrayList<>();
  private static RedisClusterClient client;

  @BeforeAll
  static void startCluster() throws Exception {
    for (int i = 0; i < SLOTS.length; i++) {
      nodes.add(RedisProcess.startClusterNode());
    }
    RedisProcess first = nodes.get(0);
    for (int i = 0; i < SLOTS.length; i++) {
      try (RedisAdmin a = RedisAdmin.connect(nodes.get(i).uri())) {
        a.sync().clusterAddSlots(IntStream.rangeClosed(SLOTS[i][0], SLOTS[i][1]).toArray());
        if (i > 0) { // CLUSTER MEET ip port bus-port: the bus is not at port + 10000 here
          a.sync().dispatch(CommandType.CLUSTER, new StatusOutput<>(StringCodec.UTF8),
              new CommandArgs<>(StringCodec.UTF8).add("MEET").add("127.0.0.1")
                  .add(first.port()).add(first.clusterPort()));
        }
      }
    }
    for (RedisProcess n : nodes) {
      try (RedisAdmin a = RedisAdmin.connect(n.uri())) {
        await().atMost(Duration.ofSeconds(60)).until(() -> {
          String info = a.sync().clusterInfo();
          return info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3");
        });
      }
    }
    client = RedisClusterClient.create(RedisURI.create(first.uri()));
  }

  @AfterAll
  static void stop() {
    if (client != null) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
    nodes.forEach(RedisProcess::close);
  }

  @Override
  protected LeaseStore newStore() {
    return RedisLeaseStore.builder(client).commandTimeout(Duration.ofSeconds(10)).build();
  }

  /** Names whose keys sit on each of the three primaries are all listed, in order. */
  @Test
  void namesOnEveryPrimaryAreListed() {
    String p = "spread-" + UUID.randomUUID() + "/";
    try (RedisLeaseStore s = RedisLeaseStore.builder(client).build()) {
      List<String> names = new ArrayList<>();
      Set<Integer> primaries = new HashSet<>();
      HolderId h = HolderId.generate();
      for (int i = 0; i < 30; i++) {
        String n = p + String.format("%02d", i);
        names.add(n);
        int slot = SlotHash.getSlot(s.keysOf(n).get(0));
        for (int k = 0; k < SLOTS.length; k++) {
          if (slot >= SLOTS[k][0] && slot <= SLOTS[k][1]) {
            primaries.add(k);
          }
        }
        assertThat(s.acquireOrRenew(n, h, Duration.ofMinutes(1))).isPresent();
      }
      assertThat(primaries).as("the names' primaries").hasSize(3);
      assertThat(s.names(p, 100)).containsExactlyElementsOf(names);
      assertThat(s.names(p, 7)).containsExactlyElementsOf(names.subList(0, 7));
    }
  }
}
