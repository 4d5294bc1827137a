package dev.leases.cli;

import dev.leases.LeaseStore;
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.etcd.EtcdServers;
import java.util.List;

/** The CLI against a real local etcd ({@code EtcdServers}), under a key prefix of its own. */
class EtcdCliTest extends KeyValueCliTest {

  @Override
  LeaseStore open(String keyPrefix) {
    return EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(keyPrefix).build();
  }

  @Override
  String endpoint() {
    return EtcdServers.endpoints();
  }

  @Override
  List<String> storeArgs(String endpoint) {
    return List.of("--store", "etcd", "--endpoints", endpoint);
  }
}
