package dev.leases.cli;

import dev.leases.LeaseStore;
import dev.leases.consul.ConsulLeaseStore;
import dev.leases.consul.ConsulServers;
import dev.leases.HolderId;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The CLI against a real local Consul agent ({@code ConsulServers}), under a key prefix of its own. */
class ConsulCliTest extends KeyValueCliTest {

  @Override
  LeaseStore open(String keyPrefix) {
    return ConsulLeaseStore.builder(ConsulServers.sharedUrl()).keyPrefix(keyPrefix).build();
  }

  /** Consul keeps no past values of a key: {@code history} says so and points to etcd. */
  @Test
  void historyIsRefusedSayingConsulKeepsNoneAndEtcdDoes() {
    String n = name();
    store().acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();
    CliRun.assertHistoryRefused(cli("history", n), "consul");
    CliRun.assertHistoryRefused(cli("history", n, "--json"), "consul");
  }

  @Override
  String endpoint() {
    return ConsulServers.sharedUrl();
  }

  @Override
  List<String> storeArgs(String endpoint) {
    return List.of("--store", "consul", "--url", endpoint);
  }
}
