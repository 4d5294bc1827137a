package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import dev.leases.benchmarks.GapAnalysis.Trial;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class GapAnalysisTest {

  private static final long MS = 1_000_000L;

  private static WriteEvent w(long atMs, String worker, long token, boolean accepted) {
    return new WriteEvent(atMs * MS, worker, 0, token, accepted);
  }

  @Test
  void crashGapRunsFromLastOldWriteToFirstNewWriteAndBoundToExpiry() {
    List<WriteEvent> log = List.of(
        w(0, "w1", 5, true), w(20, "w1", 5, true), w(40, "w1", 5, true), // killed at ~45
        w(2050, "w2", 6, true), w(2070, "w2", 6, true));
    Trial t = GapAnalysis.analyze("crash", 1, log, "w1", 5, 2040 * MS);
    assertThat(t.gapMs()).isEqualTo(2010.0);
    assertThat(t.boundMs()).isEqualTo(2000.0);
    assertThat(t.excessMs()).isEqualTo(10.0);
    assertThat(t.newWorker()).isEqualTo("w2");
    assertThat(t.newToken()).isEqualTo(6);
    assertThat(t.staleAttempts()).isZero();
    assertThat(t.note()).isEmpty();
  }

  @Test
  void pausedLeadersLateWriteCountsAsRejectedStaleAttempt() {
    List<WriteEvent> log = List.of(
        w(0, "w1", 5, true), w(20, "w1", 5, true),
        w(1500, "w3", 7, true), w(1520, "w3", 7, true),
        w(4000, "w1", 5, false), // resumed mid-unit with its old token
        w(4010, "w3", 7, true));
    Trial t = GapAnalysis.analyze("pause", 2, log, "w1", 5, 1490 * MS);
    assertThat(t.gapMs()).isEqualTo(1480.0);
    assertThat(t.boundMs()).isEqualTo(1470.0);
    assertThat(t.staleAttempts()).isEqualTo(1);
    assertThat(t.staleRejected()).isEqualTo(1);
    assertThat(t.staleAccepted()).isZero();
  }

  @Test
  void anAcceptedStaleWriteIsCounted() {
    // A broken store gave the new holder the same token: the fence (>=) cannot tell them apart.
    List<WriteEvent> log = List.of(w(0, "w1", 5, true), w(900, "w2", 6, true),
        w(950, "w1", 6, true));
    Trial t = GapAnalysis.analyze("pause", 1, log, "w1", 5, 900 * MS);
    assertThat(t.staleAttempts()).isEqualTo(1);
    assertThat(t.staleAccepted()).isEqualTo(1);
    assertThat(GapAnalysis.sharedTokens(log)).containsExactly("token 6 accepted from workers [w1, w2]");
  }

  @Test
  void cleanCloseHasBoundZero() {
    List<WriteEvent> log = List.of(w(0, "w1", 5, true), w(20, "w1", 5, true), w(55, "w2", 6, true));
    Trial t = GapAnalysis.analyze("clean", 1, log, "w1", 5, GapAnalysis.RELEASED);
    assertThat(t.gapMs()).isEqualTo(35.0);
    assertThat(t.boundMs()).isZero();
  }

  @Test
  void boundNeverNegativeAndOnlyTheOldTokenCounts() {
    List<WriteEvent> log = new ArrayList<>(List.of(w(0, "w1", 4, true), w(10, "w1", 5, true),
        w(30, "w2", 6, true)));
    Trial t = GapAnalysis.analyze("crash", 1, log, "w1", 5, 5 * MS);
    assertThat(t.gapMs()).isEqualTo(20.0);
    assertThat(t.boundMs()).isZero();
  }

  @Test
  void noTakeoverIsReportedNotInvented() {
    List<WriteEvent> log = List.of(w(0, "w1", 5, true), w(20, "w2", 4, false));
    Trial t = GapAnalysis.analyze("crash", 1, log, "w1", 5, 2000 * MS);
    assertThat(t.gapMs()).isNaN();
    assertThat(t.note()).contains("no takeover");
    assertThat(GapAnalysis.sharedTokens(log)).isEmpty();
  }
}
