package dev.leases.cli;

import dev.leases.LeaseStore;
import dev.leases.consul.ConsulLeaseStore;
import dev.leases.consul.ConsulServers;
import java.util.List;

/** The CLI against a real local Consul agent ({@code ConsulServers}), under a key prefix of its own. */
class ConsulCliTest extends KeyValueCliTest {

  @Override
  LeaseStore open(String keyPrefix) {
    return ConsulLeaseStore.builder(ConsulServers.sharedUrl()).keyPrefix(keyPrefix).build();
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
