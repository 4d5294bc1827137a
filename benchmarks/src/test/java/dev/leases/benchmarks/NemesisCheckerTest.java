package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.benchmarks.FenceServer.WriteEvent;
import dev.leases.benchmarks.NemesisChecker.Fault;
import dev.leases.benchmarks.NemesisChecker.Grant;
import dev.leases.benchmarks.NemesisChecker.Kind;
import dev.leases.benchmarks.NemesisChecker.Result;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Hand-made histories: a clean one passes, and each kind of violation is reported. */
class NemesisCheckerTest {

  private static Grant grant(String worker, String holder, long token, long tried, long reported) {
    return new Grant(worker, holder, token, tried, reported);
  }

  private static WriteEvent write(long at, String worker, long token, boolean accepted) {
    return new WriteEvent(at, worker, at, token, accepted);
  }

  private static List<Kind> kinds(Result r) {
    return r.violations().stream().map(NemesisChecker.Violation::kind).toList();
  }

  /** w1 leads with 5 (renewing), is paused, w2 takes 6, w1's stale write is rejected. */
  private static final List<Grant> CLEAN_GRANTS = List.of(
      grant("w1", "h1", 5, 0, 10),
      grant("w1", "h1", 5, 20, 30),
      grant("w2", "h2", 6, 100, 110),
      grant("w2", "h2", 6, 120, 130));
  private static final List<WriteEvent> CLEAN_WRITES = List.of(
      write(11, "w1", 5, true), write(31, "w1", 5, true), write(111, "w2", 6, true),
      write(112, "w1", 5, false), write(131, "w2", 6, true));

  @Test
  void aCleanHistoryHasNoViolationAndCountsChangesWritesAndRecovery() {
    Result r = NemesisChecker.check(CLEAN_GRANTS, CLEAN_WRITES,
        List.of(new Fault("pause-long", "w1", 40, 100), new Fault("clock-step", "w2", 125, 125)));
    assertThat(r.violations()).isEmpty();
    assertThat(r.changes()).isEqualTo(1);
    assertThat(r.accepted()).isEqualTo(4);
    assertThat(r.rejected()).isEqualTo(1);
    assertThat(r.maxRecoveryNanos()).isEqualTo(11); // 100 -> write at 111
    assertThat(r.unrecovered()).isEmpty();
  }

  @Test
  void aTokenGrantedToTwoHoldersIsReported() {
    Result r = NemesisChecker.check(List.of(
        grant("w1", "h1", 5, 0, 10),
        grant("w2", "h2", 5, 5, 12), // concurrent with w1's grant, so only the sharing is wrong
        grant("w2", "h2", 5, 20, 25)), List.of(), List.of());
    assertThat(kinds(r)).contains(Kind.TOKEN_SHARED);
    assertThat(r.violations().stream().filter(x -> x.kind() == Kind.TOKEN_SHARED)).hasSize(1);
  }

  @Test
  void aLowerTokenGrantedAfterAHigherOneFinishedIsReported() {
    Result r = NemesisChecker.check(List.of(
        grant("w1", "h1", 7, 0, 10),
        grant("w2", "h2", 6, 20, 30)), List.of(), List.of());
    assertThat(kinds(r)).containsExactly(Kind.TOKEN_BACKWARDS);
  }

  @Test
  void theSameTokenForAnotherHolderAfterwardsIsBackwardsToo() {
    Result r = NemesisChecker.check(List.of(
        grant("w1", "h1", 7, 0, 10),
        grant("w1", "h1b", 7, 20, 30)), List.of(), List.of());
    assertThat(kinds(r)).contains(Kind.TOKEN_BACKWARDS, Kind.TOKEN_SHARED);
  }

  @Test
  void overlappingGrantsAreNotOrderedByWhenTheirReportsArrived() {
    // w1 asked at 0, was frozen before reporting token 5 at 200; w2 asked at 50 and got 6 at 60.
    Result r = NemesisChecker.check(List.of(
        grant("w1", "h1", 5, 0, 200),
        grant("w2", "h2", 6, 50, 60)), List.of(), List.of());
    assertThat(r.violations()).isEmpty();
    // ... but a grant whose try came after w2's report must not be below 6
    Result later = NemesisChecker.check(List.of(
        grant("w1", "h1", 5, 0, 200),
        grant("w2", "h2", 6, 50, 60),
        grant("w1", "h1", 5, 70, 80)), List.of(), List.of());
    assertThat(kinds(later)).containsExactly(Kind.TOKEN_BACKWARDS);
  }

  @Test
  void aGrantWithoutAKnownStartIsOrderedOnlyBeforeOthers() {
    Result r = NemesisChecker.check(List.of(
        grant("w1", "h1", 7, 0, 10),
        grant("w2", "h2", 6, NemesisChecker.UNKNOWN, 30)), List.of(), List.of());
    assertThat(r.violations()).isEmpty();
    Result after = NemesisChecker.check(List.of(
        grant("w2", "h2", 7, NemesisChecker.UNKNOWN, 5),
        grant("w1", "h1", 6, 10, 20)), List.of(), List.of());
    assertThat(kinds(after)).containsExactly(Kind.TOKEN_BACKWARDS);
  }

  @Test
  void anAcceptedWriteBelowTheSameWorkersEarlierWriteIsReported() {
    Result r = NemesisChecker.check(CLEAN_GRANTS, List.of(
        write(1, "w1", 5, true), write(2, "w1", 4, true)), List.of());
    assertThat(kinds(r)).containsExactly(Kind.WRITE_BACKWARDS);
  }

  @Test
  void anAcceptedWriteAfterASuccessorsHigherWriteIsReported() {
    Result r = NemesisChecker.check(CLEAN_GRANTS, List.of(
        write(1, "w1", 5, true), write(2, "w2", 6, true), write(3, "w1", 5, true),
        write(4, "w1", 5, false)), List.of());
    assertThat(kinds(r)).containsExactly(Kind.STALE_WRITE);
    assertThat(r.violations().get(0).detail()).contains("w1", "token 5", "w2", "token 6");
  }

  @Test
  void rejectedStaleWritesAreNotViolations() {
    Result r = NemesisChecker.check(CLEAN_GRANTS, List.of(
        write(1, "w1", 5, true), write(2, "w2", 6, true), write(3, "w1", 5, false)), List.of());
    assertThat(r.violations()).isEmpty();
    assertThat(r.rejected()).isEqualTo(1);
  }

  @Test
  void aFaultWithNoAcceptedWriteAfterItIsUnrecovered() {
    Fault f = new Fault("kill", "w2", 200, 250);
    Result r = NemesisChecker.check(CLEAN_GRANTS, CLEAN_WRITES,
        List.of(new Fault("pause-short", "w1", 0, 20), f));
    assertThat(r.unrecovered()).containsExactly(f);
    assertThat(r.maxRecoveryNanos()).isEqualTo(11); // 20 -> 31
  }
}
