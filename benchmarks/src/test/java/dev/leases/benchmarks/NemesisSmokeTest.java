package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The nemesis end to end on the memory backend: worker JVMs, real faults, a fixed seed. */
class NemesisSmokeTest {

  @Test
  @Timeout(400)
  void twentyChangesUnderFaultsOfSeveralKindsLeaveNoViolation(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Nemesis.run(new String[] {"--backends", "memory", "--changes", "20", "--seed",
        "7", "--out", dir.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);
    String why = text + err.toString(StandardCharsets.UTF_8);
    assertThat(status).as(why).isZero();
    assertThat(text).contains("nemesis: seed 7").doesNotContain("VIOLATION", "FAILED");
    Matcher summary = Pattern.compile("(?m)^nemesis: memory changes (\\d+) faults (\\d+) accepted"
        + " (\\d+) rejected (\\d+) violations 0 max-recovery (\\d+\\.\\d+)$").matcher(text);
    assertThat(summary.find()).as(why).isTrue();
    assertThat(Integer.parseInt(summary.group(1))).isGreaterThanOrEqualTo(20);
    assertThat(Long.parseLong(summary.group(3))).isPositive();
    String byType = text.lines().filter(l -> l.startsWith("nemesis: memory faults by type: "))
        .findFirst().orElseThrow();
    long kinds = Arrays.stream(byType.substring(byType.indexOf(": ", 9) + 2).split(", ")).count();
    assertThat(kinds).as(byType).isGreaterThanOrEqualTo(4);
  }

  @Test
  void theSameSeedGivesTheSameSchedule() {
    var types = java.util.List.of(NemesisSchedule.FaultType.values());
    NemesisSchedule a = new NemesisSchedule(99, types, 1000);
    NemesisSchedule b = new NemesisSchedule(99, types, 1000);
    NemesisSchedule c = NemesisSchedule.lane(99, 1, types, 1000);
    boolean differs = false;
    for (int i = 0; i < 50; i++) {
      NemesisSchedule.Step x = a.next();
      assertThat(b.next()).isEqualTo(x);
      differs |= !c.next().equals(x);
    }
    assertThat(differs).isTrue();
  }

  @Test
  void usageErrorsExitWithTwoAndHelpDocumentsTheOptions() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
    PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
    assertThat(Nemesis.run(new String[] {"--backends", "memory"}, o, e)).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--changes N is required");
    assertThat(Nemesis.run(new String[] {"--changes", "3", "--workers", "9"}, o, e)).isEqualTo(2);
    assertThat(Nemesis.run(new String[] {"--changes", "3", "--faults", "meteor"}, o, e))
        .isEqualTo(2);
    assertThat(Nemesis.run(new String[] {"--changes", "3", "--workers", "3", "--lanes", "3"}, o,
        e)).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--lanes must be less than");
    assertThat(NemesisOptions.parse(new String[] {"--changes", "3", "--faults", "store-restart"})
        .faults).as("the old name of the store faults").containsExactly(
            NemesisSchedule.FaultType.STORE);
    assertThat(Nemesis.run(new String[] {"--help"}, o, e)).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("--changes N", "--seed S",
        "--start-local", "--ttl-ms T", "--workers K", "--lanes L", "--faults LIST",
        "max-recovery", "leader-kill", "replica-promotion");
  }

  @Test
  void fakeTimeOffsetsUseTheLibrarysRelativeForm() {
    assertThat(Faketime.format(0)).isEqualTo("+0");
    assertThat(Faketime.format(-3500)).isEqualTo("-3.500s");
    assertThat(Faketime.format(1_209_600_000L)).isEqualTo("+1209600.000s");
  }
}
