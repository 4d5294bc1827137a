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
}
