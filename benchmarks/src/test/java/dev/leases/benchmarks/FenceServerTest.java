package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FenceServerTest {

  @Test
  void acceptsEqualOrHigherTokensAndRejectsLowerOnesOverTheWire() throws Exception {
    try (FenceServer fence = new FenceServer("t");
        Socket s = new Socket(InetAddress.getLoopbackAddress(), fence.port())) {
      BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
          StandardCharsets.UTF_8));
      Writer out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
      String[] requests = {"WRITE 3 a 1", "WRITE 3 a 2", "WRITE 4 b 1", "WRITE 3 a 3", "BOGUS"};
      String[] replies = new String[requests.length];
      for (int i = 0; i < requests.length; i++) {
        out.write(requests[i] + "\n");
        out.flush();
        replies[i] = in.readLine();
      }
      assertThat(replies).containsExactly("OK", "OK", "OK", "REJECTED 4",
          "ERROR expected: WRITE <token> <worker> <seq>");
      assertThat(fence.events()).extracting(FenceServer.WriteEvent::accepted)
          .containsExactly(true, true, true, false);
      assertThat(fence.events().get(3).worker()).isEqualTo("a");
      assertThat(fence.highestToken()).isEqualTo(4);
      long[] at = fence.events().stream().mapToLong(FenceServer.WriteEvent::atNanos).toArray();
      for (int i = 1; i < at.length; i++) {
        assertThat(at[i]).isGreaterThanOrEqualTo(at[i - 1]);
      }
    }
  }

  @Test
  void tokenZeroIsNeverAccepted() throws Exception {
    try (FenceServer fence = new FenceServer("t")) {
      assertThat(fence.write(0, "a", 1).accepted()).isFalse();
    }
  }

  @Test
  void unfencedAcceptsEveryWriteAndNumbersTenuresByChangeOfWriter() throws Exception {
    try (FenceServer fence = FenceServer.unfenced("t")) {
      String[][] writes = {{"a", "1"}, {"a", "2"}, {"b", "1"}, {"a", "3"}, {"b", "2"}, {"b", "3"}};
      for (String[] w : writes) {
        assertThat(fence.write(0, w[0], Long.parseLong(w[1])).accepted()).isTrue();
      }
      assertThat(fence.events()).extracting(FenceServer.WriteEvent::token)
          .containsExactly(1L, 1L, 2L, 3L, 4L, 4L);
      // the one rule for stale writes: the old leader's writes after the successor's first one
      GapAnalysis.Trial t = GapAnalysis.analyze("pause", 1, fence.events(), "a", 1,
          GapAnalysis.UNKNOWN);
      assertThat(t.newWorker()).isEqualTo("b");
      assertThat(t.staleAttempts()).isEqualTo(1);
      assertThat(t.staleAccepted()).isEqualTo(1);
      assertThat(t.boundMs()).isNaN();
      assertThat(GapAnalysis.sharedTokens(fence.events())).isEmpty();
    }
  }
}
