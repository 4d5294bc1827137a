package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunKeys;
import dev.leases.once.RunOutcome;
import dev.leases.once.RunRecord;
import dev.leases.tck.process.ChildArgs;
import dev.leases.tck.process.ChildJvm;
import dev.leases.tck.process.StoreRecipe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Exactly-once runs across separate JVMs ({@link OnceRunnerMain}) on the shared PostgreSQL: many
 * processes firing one (job, run) at skews from 0 to 5 s, a runner killed or frozen mid-run, and a
 * run ten times longer than its TTL. Each ends with exactly one effect row.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ExactlyOnceProcessTest {

  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration WAIT = Duration.ofSeconds(90);

  private static HikariDataSource pool;
  private static PostgresLeaseStore store;
  private static JdbcRunLedger ledger;
  private final List<ChildJvm> children = new ArrayList<>();
  private final List<Path> logs = new ArrayList<>();

  @BeforeAll
  static void setUp() throws Exception {
    pool = PostgresServers.pool(6);
    store = PostgresLeaseStore.builder(pool).build();
    ledger = JdbcRunLedger.builder(pool).build();
    JdbcRunLedgerTest.createEffects(pool);
    ledger.history("warm-up", 1); // creates the tables before the children race to
  }

  @AfterAll
  static void tearDown() {
    store.close();
    pool.close();
  }

  @AfterEach
  void stopChildren() throws Exception {
    children.forEach(ChildJvm::close);
    for (Path p : logs) {
      Files.deleteIfExists(p);
    }
  }

  /** Starts {@code n} children concurrently and waits until each has printed READY. */
  private List<ChildJvm> start(int n, String job, long workMs) throws Exception {
    StoreRecipe recipe = new StoreRecipe(PostgresLeaseStoreFactory.class,
        Map.of(PostgresLeaseStoreFactory.JDBC_URL, PostgresServers.url()));
    List<String> args = ChildArgs.format(recipe, Map.of("url", PostgresServers.url(), "job", job,
        "ttl-ms", Long.toString(TTL.toMillis()), "work-ms", Long.toString(workMs)));
    List<ChildJvm> started = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Path log = Files.createTempFile("leases-once-child-", ".log");
      logs.add(log);
      ChildJvm c = ChildJvm.start(OnceRunnerMain.class, args, log);
      children.add(c);
      started.add(c);
    }
    for (ChildJvm c : started) {
      line(c, "READY ", 0);
    }
    return started;
  }

  private static String line(ChildJvm c, String prefix, int from) throws InterruptedException {
    return c.awaitLine(prefix, from, WAIT).orElseThrow(() -> new AssertionError("child " + c.pid()
        + " printed no '" + prefix + "' within " + WAIT + "; transcript " + c.transcript()
        + "; log:\n" + c.stderrTail()));
  }

  /**
   * Sends {@code FIRE run} to child i at {@code skews[i]} after a common start and returns each
   * child's OUTCOME line (without the "OUTCOME run " prefix).
   */
  private static List<String> fire(List<ChildJvm> kids, String run, long[] skewsMs)
      throws Exception {
    int[] from = new int[kids.size()];
    for (int i = 0; i < kids.size(); i++) {
      from[i] = kids.get(i).lineCount();
    }
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(2);
    try {
      for (int i = 0; i < kids.size(); i++) {
        ChildJvm c = kids.get(i);
        timer.schedule(() -> {
          c.send("FIRE " + run);
          return null;
        }, skewsMs[i], TimeUnit.MILLISECONDS);
      }
      List<String> outcomes = new ArrayList<>();
      for (int i = 0; i < kids.size(); i++) {
        outcomes.add(line(kids.get(i), "OUTCOME " + run + " ", from[i])
            .substring(("OUTCOME " + run + " ").length()));
      }
      return outcomes;
    } finally {
      timer.shutdownNow();
    }
  }

  private static String kind(String outcome) {
    return outcome.split(" ")[0];
  }

  /** Checks one completion and one effect row, and returns the outcome counts. */
  private static Map<String, Integer> checkExactlyOnce(String job, String run,
      List<String> outcomes) throws Exception {
    Map<String, Integer> counts = new TreeMap<>();
    outcomes.forEach(o -> counts.merge(kind(o), 1, Integer::sum));
    assertThat(counts).as("outcomes %s", outcomes).containsEntry("COMPLETED", 1);
    assertThat(counts.keySet()).as("outcomes %s", outcomes)
        .isSubsetOf("COMPLETED", "ALREADY_COMPLETED", "RUNNING_ELSEWHERE");
    long token = outcomes.stream().filter(o -> kind(o).equals("COMPLETED"))
        .mapToLong(o -> Long.parseLong(o.split(" ")[1])).findFirst().orElseThrow();
    assertThat(JdbcRunLedgerTest.effectTokens(pool, job, run)).containsExactly(token);
    assertThat(JdbcRunLedgerTest.completedRows(pool, JdbcRunLedger.DEFAULT_TABLE, job, run))
        .isOne();
    assertThat(ledger.completion(job, run)).get().extracting(RunRecord::token).isEqualTo(token);
    return counts;
  }

  private static String summary(String what, List<Map<String, Integer>> rounds) {
    Map<String, Integer> total = new TreeMap<>();
    rounds.forEach(r -> r.forEach((k, v) -> total.merge(k, v, Integer::sum)));
    int attempted = total.values().stream().mapToInt(Integer::intValue).sum();
    return what + ": runs attempted " + attempted + " / completed "
        + total.getOrDefault("COMPLETED", 0) + " / already-completed "
        + total.getOrDefault("ALREADY_COMPLETED", 0) + " / running-elsewhere "
        + total.getOrDefault("RUNNING_ELSEWHERE", 0) + " (per round " + rounds + ")";
  }

  @Test
  void twoJvmsFiringOneRunAtSkewsFromZeroToFiveSecondsCompleteItOnce() throws Exception {
    String job = "two-" + UUID.randomUUID();
    List<ChildJvm> kids = start(2, job, 1500);
    List<Map<String, Integer>> rounds = new ArrayList<>();
    for (long skew : new long[] {0, 300, 1000, 2500, 5000}) {
      String run = "skew-" + skew;
      List<String> outcomes = fire(kids, run, new long[] {0, skew});
      rounds.add(checkExactlyOnce(job, run, outcomes));
    }
    System.out.println("[exactly-once] " + summary("2 JVMs, skews 0/300/1000/2500/5000 ms,"
        + " work 1.5 s, ttl 1 s", rounds));
  }

  @Test
  void tenJvmsFiringOneRunAtSkewsFromZeroToFiveSecondsCompleteItOnce() throws Exception {
    String job = "ten-" + UUID.randomUUID();
    List<ChildJvm> kids = start(10, job, 1500);
    List<Map<String, Integer>> rounds = new ArrayList<>();
    rounds.add(checkExactlyOnce(job, "spread", fire(kids, "spread",
        new long[] {0, 0, 0, 300, 600, 1000, 2000, 3000, 4000, 5000})));
    rounds.add(checkExactlyOnce(job, "together", fire(kids, "together", new long[10])));
    System.out.println("[exactly-once] " + summary("10 JVMs, skews 0,0,0,0.3,0.6,1,2,3,4,5 s"
        + " then all at 0, work 1.5 s, ttl 1 s", rounds));
  }

  private ExactlyOnce<Connection> parentRunner() {
    return ExactlyOnce.builder(store, ledger).ttl(TTL).build();
  }

  private static RunOutcome fireHere(ExactlyOnce<Connection> once, String job, String run) {
    return once.run(job, run, (c, ctx) ->
        JdbcRunLedgerTest.insertEffect(c, job, run, ctx.token(), "parent"));
  }

  @Test
  void aRunnerKilledMidRunLeavesNothingAndAnotherProcessCompletesAfterTheTtl() throws Exception {
    String job = "kill-" + UUID.randomUUID();
    ChildJvm victim = start(1, job, 600_000).get(0);
    String holder = line(victim, "READY ", 0).substring(6);
    victim.send("FIRE r");
    long victimToken = Long.parseLong(line(victim, "WORKING r ", 0).split(" ")[2]);
    victim.signal("KILL");
    assertThat(victim.waitForExit(WAIT)).isTrue();

    try (ExactlyOnce<Connection> successor = parentRunner()) {
      RunOutcome early = fireHere(successor, job, "r");
      assertThat(early).as("within the dead runner's TTL")
          .isInstanceOf(RunOutcome.RunningElsewhere.class);
      assertThat(((RunOutcome.RunningElsewhere) early).holder())
          .contains(new HolderId(holder));
      RunOutcome[] last = new RunOutcome[1];
      await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
        last[0] = fireHere(successor, job, "r");
        return !(last[0] instanceof RunOutcome.RunningElsewhere);
      });
      assertThat(last[0]).isInstanceOf(RunOutcome.Completed.class);
      long token = ((RunOutcome.Completed) last[0]).token();
      assertThat(token).isGreaterThan(victimToken);
      assertThat(JdbcRunLedgerTest.effectTokens(pool, job, "r"))
          .as("the killed run's insert rolled back").containsExactly(token);
      assertThat(ledger.history(job, 10)).extracting(RunRecord::status)
          .containsExactly(RunRecord.Status.COMPLETED, RunRecord.Status.STARTED);
      System.out.println("[exactly-once] SIGKILL mid-run: killed token " + victimToken
          + ", completed by another process with token " + token + ", effect rows "
          + JdbcRunLedgerTest.effectTokens(pool, job, "r").size());
    }
  }

  @Test
  void aRunnerFrozenPastItsTtlIsFencedOutWhenItResumes() throws Exception {
    String job = "stop-" + UUID.randomUUID();
    ChildJvm frozen = start(1, job, 3 * TTL.toMillis()).get(0);
    frozen.send("FIRE r");
    long frozenToken = Long.parseLong(line(frozen, "WORKING r ", 0).split(" ")[2]);
    frozen.signal("STOP");
    String lease = RunKeys.leaseName(job);
    await().atMost(WAIT).pollInterval(Duration.ofMillis(50))
        .until(() -> store.inspect(lease).status() != LeaseState.Status.HELD);

    try (ExactlyOnce<Connection> successor = parentRunner()) {
      RunOutcome done = fireHere(successor, job, "r");
      assertThat(done).isInstanceOf(RunOutcome.Completed.class);
      long token = ((RunOutcome.Completed) done).token();
      frozen.signal("CONT");
      String outcome = line(frozen, "OUTCOME r ", 0).substring("OUTCOME r ".length());
      assertThat(outcome).isEqualTo("FENCED " + frozenToken + " " + token);
      assertThat(JdbcRunLedgerTest.effectTokens(pool, job, "r")).containsExactly(token);
      assertThat(ledger.history(job, 10)).extracting(RunRecord::status)
          .containsExactly(RunRecord.Status.COMPLETED, RunRecord.Status.FAILED);
      System.out.println("[exactly-once] SIGSTOP past the TTL: frozen token " + frozenToken
          + " resumed and was refused (" + outcome + "); effect rows "
          + JdbcRunLedgerTest.effectTokens(pool, job, "r").size());
    }
  }

  @Test
  void aRunTenTimesLongerThanItsTtlCompletesHoldingItsLeaseThroughout() throws Exception {
    String job = "long-" + UUID.randomUUID();
    ChildJvm runner = start(1, job, 10 * TTL.toMillis()).get(0);
    runner.send("FIRE r");
    line(runner, "WORKING r ", 0);
    String lease = RunKeys.leaseName(job);
    HolderId rival = HolderId.generate();
    int tries = 0;
    int granted = 0;
    Map<String, Integer> firings = new TreeMap<>();
    try (ExactlyOnce<Connection> other = parentRunner()) {
      while (runner.awaitLine("OUTCOME r ", 0, Duration.ofMillis(200)).isEmpty()) {
        tries++;
        if (store.acquireOrRenew(lease, rival, TTL).isPresent()) {
          granted++;
          store.release(lease, rival);
        }
        RunOutcome o = fireHere(other, job, "r");
        firings.merge(o.getClass().getSimpleName(), 1, Integer::sum);
      }
    }
    String outcome = line(runner, "OUTCOME r ", 0).substring("OUTCOME r ".length());
    assertThat(outcome).startsWith("COMPLETED ").endsWith(" true");
    assertThat(granted).as("grants to a rival during the run").isZero();
    assertThat(tries).as("the rival tried throughout").isGreaterThan(10);
    assertThat(firings).as("firings elsewhere during the run").containsKey("RunningElsewhere");
    assertThat(firings.keySet()).as("firings elsewhere during the run")
        .isSubsetOf("RunningElsewhere", "AlreadyCompleted");
    long token = Long.parseLong(outcome.split(" ")[1]);
    assertThat(JdbcRunLedgerTest.effectTokens(pool, job, "r")).containsExactly(token);
    System.out.println("[exactly-once] run of 10 x ttl (" + TTL.multipliedBy(10) + "): "
        + outcome + "; rival acquire attempts " + tries + ", granted " + granted
        + "; concurrent firings " + firings);
  }
}
