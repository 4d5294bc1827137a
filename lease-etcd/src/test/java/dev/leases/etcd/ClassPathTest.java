package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.Version;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * jetcd 0.8 pulls Netty 4.2 through Vert.x 5 but 4.1 through grpc-netty; without the Netty BOM the
 * class path mixes both lines. Lettuce 7 (lease-redis) needs the same 4.2 line on a shared class path.
 */
class ClassPathTest {

  @Test
  void everyNettyArtifactIsOneFourPointTwoVersion() throws Exception {
    Map<String, Version> versions = Version.identify();
    Set<String> distinct = versions.values().stream().map(Version::artifactVersion)
        .collect(Collectors.toSet());
    assertThat(distinct).as("Netty artifacts %s", versions.keySet()).hasSize(1);
    assertThat(distinct.iterator().next()).startsWith("4.2.");
    assertThat(Class.forName("io.netty.channel.MultiThreadIoEventLoopGroup")).isNotNull();
  }
}
