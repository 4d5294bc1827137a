package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.tck.servers.ServerSpec;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EtcdServersTest {

  @Test
  void anExplicitEndpointWinsAndNothingIsStarted() {
    ServerSpec spec = EtcdServers.spec();
    assertThat(spec.product()).isEqualTo("etcd");
    assertThat(spec.envVar()).isEqualTo("LEASES_ETCD_ENDPOINTS");
    assertThat(spec.installHint()).contains("apt-get install -y etcd-server")
        .contains("LEASES_ETCD_ENDPOINTS=http://127.0.0.1:2379");
    assertThat(spec.local()).isPresent();
    assertThat(spec.container()).isPresent();
    TestServer s = new TestServers(Map.of("LEASES_ETCD_ENDPOINTS", " http://10.0.0.9:2379 "),
        () -> false).provide(spec);
    assertThat(s.endpoint()).isEqualTo("http://10.0.0.9:2379");
    s.close();
  }

  @Test
  void etcdRunsWithoutTheUnsupportedArchSwitchOnlyOnAmd64() {
    List<String> argv = EtcdServers.argv(Path.of("/usr/bin/etcd"), "n", Path.of("/tmp/d"), 1, 2,
        "n=http://127.0.0.1:2", "t", 50, 500);
    if (EtcdServers.goArch().equals("amd64")) {
      assertThat(argv.get(0)).isEqualTo("/usr/bin/etcd");
    } else {
      assertThat(argv.subList(0, 2)).containsExactly("env",
          "ETCD_UNSUPPORTED_ARCH=" + EtcdServers.goArch());
    }
    assertThat(argv).contains("--listen-client-urls=http://127.0.0.1:1",
        "--initial-advertise-peer-urls=http://127.0.0.1:2", "--election-timeout=500");
  }
}
