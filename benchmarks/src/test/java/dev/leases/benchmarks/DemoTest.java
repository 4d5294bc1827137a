package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The README's main job, run as a test: the paused leader's write must be fenced out. */
class DemoTest {

  @Test
  void pausedLeadersWriteIsFencedOutAndNothingStaleLands() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int status;
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      status = Demo.run(new String[] {"--ttl-ms", "1500"}, out);
    }
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertThat(status).as(text).isZero();
    assertThat(text).contains("REJECTED by the fence, zero rows changed")
        .contains("stale writes accepted: 0")
        .contains("A's leader loop reports: LOST")
        .doesNotContain("SAFETY VIOLATION");
    assertThat(text.lines().filter(l -> l.matches("\\s+\\d+ \\| A \\(stale\\).*"))).isEmpty();
  }
}
