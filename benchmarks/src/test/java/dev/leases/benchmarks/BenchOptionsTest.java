package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class BenchOptionsTest {

  @Test
  void defaultsAndOverrides() {
    BenchOptions d = BenchOptions.parse(new String[0]);
    assertThat(d.backends).containsExactly("memory", "postgres");
    assertThat(d.trials).isEqualTo(3);
    assertThat(d.scale).containsExactly(1, 100, 10_000, 100_000);
    assertThat(d.scaleTtl).isEqualTo(java.time.Duration.ofSeconds(10));
    assertThat(BenchOptions.parse(new String[] {"--scale-ttl", "2500ms"}).scaleTtl)
        .isEqualTo(java.time.Duration.ofMillis(2500));
    assertThat(BenchOptions.parse(new String[] {"--scale-ttl=1m"}).scaleTtl)
        .isEqualTo(java.time.Duration.ofMinutes(1));
    assertThat(d.latencyWarmupTime).isEqualTo(java.time.Duration.ofSeconds(20));
    assertThat(BenchOptions.parse(new String[] {"--latency-warmup", "2s"}).latencyWarmupTime)
        .isEqualTo(java.time.Duration.ofSeconds(2));
    BenchOptions o = BenchOptions.parse(new String[] {"--backends=memory,redis", "--trials", "5",
        "--scale", "1,10", "--scenarios", "crash", "--start-local", "--only", "failover",
        "--custom-setting", "url=http://x?a=b"});
    assertThat(o.backends).containsExactly("memory", "redis");
    assertThat(o.trials).isEqualTo(5);
    assertThat(o.scale).containsExactly(1, 10);
    assertThat(o.scenarios).containsExactly("crash");
    assertThat(o.startLocal).isTrue();
    assertThat(o.parts).containsExactly("failover");
    assertThat(o.customSettings).containsEntry("url", "http://x?a=b");
  }

  @Test
  void badInputIsRefusedWithAMessage() {
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--trials", "0"}))
        .hasMessageContaining("--trials needs a positive whole number");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--scenarios", "nap"}))
        .hasMessageContaining("choose from [clean, crash, pause]");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--frobnicate"}))
        .hasMessageContaining("unknown option --frobnicate");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--scale-ttl", "10"}))
        .hasMessageContaining("--scale-ttl needs a positive duration with a unit");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--scale-ttl", "0s"}))
        .hasMessageContaining("like 10s or 2500ms; got '0s'");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--latency-warmup", "20"}))
        .hasMessageContaining("--latency-warmup needs a positive duration with a unit");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--trials"}))
        .hasMessageContaining("needs a value");
  }

  @Test
  void unknownOrUnavailableBackendsSayHowToIncludeThemAndRunNothing() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Bench.run(new String[] {"--backends", "memory,nosuch,consul,custom",
        "--redis-uri", ""}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String e = err.toString(StandardCharsets.UTF_8);
    assertThat(status).isEqualTo(2);
    assertThat(e).contains("unknown backend 'nosuch'; known: memory, postgres, redis, etcd, consul",
        "cannot include consul", "cannot include custom: pass --custom-factory");
    assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void helpListsEveryBackend() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status = Bench.run(new String[] {"--help"}, new PrintStream(out, true,
        StandardCharsets.UTF_8), System.err);
    assertThat(status).isZero();
    String text = out.toString(StandardCharsets.UTF_8);
    for (String name : List.of("memory", "postgres", "redis", "etcd", "consul", "custom")) {
      assertThat(text).contains(name);
    }
    assertThat(text).contains("--start-local", "--out DIR", "--trials N", "--scale-ttl DURATION");
  }

  @Test
  void peersAreNoneByDefaultAllOrANamedList() {
    assertThat(BenchOptions.parse(new String[0]).peerMechanisms).isEmpty();
    assertThat(BenchOptions.parse(new String[] {"--peers", "all"}).peerMechanisms)
        .containsExactly(PeerMechanism.values());
    assertThat(BenchOptions.parse(new String[] {"--peers=redisson,shedlock-jdbc,redisson"})
        .peerMechanisms).containsExactly(PeerMechanism.REDISSON, PeerMechanism.SHEDLOCK_JDBC);
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--peers", "zookeeper"}))
        .hasMessageContaining("--peers: unknown 'zookeeper'; choose from"
            + " [spring-integration-jdbc, redisson, shedlock-jdbc] or all");
  }

  @Test
  void aNamedPeerNeedsItsBackendAndAllSkipsThoseWithout() {
    BenchOptions named = BenchOptions.parse(new String[] {"--peers", "redisson"});
    assertThat(Peers.problems(named, List.of("memory", "postgres"))).containsExactly(
        "--peers redisson runs on redis: add redis to --backends (with --start-local to start the"
            + " installed redis-server)");
    BenchOptions all = BenchOptions.parse(new String[] {"--peers", "all"});
    assertThat(Peers.problems(all, List.of("postgres"))).isEmpty();
    assertThat(Peers.skipped(all, List.of("postgres"))).extracting(RunResult.Skipped::name)
        .containsExactly("peer redisson");
  }

  @Test
  void shedlockKeepAliveRefusesATwoSecondTtlSoItRunsAtItsMinimum() {
    PeerMechanism.Ttl t = PeerMechanism.SHEDLOCK_JDBC.fitTtl(java.time.Duration.ofSeconds(2));
    assertThat(t.ttl()).isEqualTo(java.time.Duration.ofSeconds(30));
    assertThat(t.note()).startsWith("ShedLock refuses TTL 2.00 s with keep-alive (\"")
        .endsWith("measured at 30.00 s");
    assertThat(PeerMechanism.REDISSON.fitTtl(java.time.Duration.ofSeconds(2)).note()).isEmpty();
  }
}
