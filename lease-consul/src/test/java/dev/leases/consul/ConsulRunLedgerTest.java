package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunRecord;
import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.TcpProxy;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;

/**
 * {@link ConsulRunLedger} against the shared agent, beyond the kit: races on one run, hostile
 * names, where the keys go, a stalled agent, an out-of-band delete, and input checks. Each test
 * uses a key prefix of its own, so that it can list every key the ledger wrote.
 */
class ConsulRunLedgerTest {

  private static final Duration CALL_TIMEOUT = Duration.ofMillis(300);
  /** A call's bound as the caller sees it, with room for a loaded machine. */
  private static final Duration CALL_BOUND = CALL_TIMEOUT.plusSeconds(2);
  private static final Consumer<Void> NOTHING = none -> {};

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private Consul admin;
  private String prefix;

  @BeforeEach
  void open() {
    admin = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false).build();
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    prefix = "tests/ledger-" + HexFormat.of().formatHex(b);
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    admin.keyValueClient().deleteKeys(prefix);
    admin.destroy();
  }

  private ConsulRunLedger ledger() {
    return ledger(ConsulRunLedger.builder(ConsulServers.sharedUrl()).keyPrefix(prefix));
  }

  private ConsulRunLedger ledger(ConsulRunLedger.Builder b) {
    ConsulRunLedger l = b.build();
    closeables.add(l);
    return l;
  }

  private List<String> keysUnderPrefix() {
    return admin.keyValueClient().getKeys(prefix);
  }

  // ---------------------------------------------------------------- races

  /**
   * Eight threads on four ledger clients fire one run again and again under ever higher tokens
   * (each begins, runs, completes, and stops once begin answers the completion). Exactly one
   * attempt completes; and since a begin after the completion answers it without recording an
   * attempt, every attempt recorded began before the completion, so none may have a higher token
   * than the completed one (it would have fenced the completion out).
   */
  @Test
  void racingRunnersUnderIncreasingTokensCompleteARunOnceAndNeverUnderASupersededToken()
      throws Exception {
    List<ConsulRunLedger> clients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      clients.add(ledger(ConsulRunLedger.builder(ConsulServers.sharedUrl()).keyPrefix(prefix)
          .callTimeout(Duration.ofSeconds(20))));
    }
    int threads = 8;
    int runs = 4;
    AtomicLong tokens = new AtomicLong(100);
    for (int r = 0; r < runs; r++) {
      String job = "race";
      String run = "run-" + r;
      ConcurrentLinkedQueue<String> unexpected = new ConcurrentLinkedQueue<>();
      ConcurrentLinkedQueue<RunRecord> ownCompletions = new ConcurrentLinkedQueue<>();
      AtomicInteger fenced = new AtomicInteger();
      CountDownLatch go = new CountDownLatch(1);
      CountDownLatch done = new CountDownLatch(threads);
      for (int t = 0; t < threads; t++) {
        ConsulRunLedger l = clients.get(t % clients.size());
        HolderId holder = HolderId.generate();
        Thread th = new Thread(() -> {
          try {
            go.await();
            while (true) {
              RunRecord attempt;
              try {
                attempt = l.begin(job, run, tokens.incrementAndGet(), holder);
              } catch (FencedOutException e) {
                fenced.incrementAndGet();
                continue; // a higher token began meanwhile: draw a new one
              }
              if (attempt.status() == RunRecord.Status.COMPLETED) {
                return;
              }
              try {
                RunRecord result = l.complete(attempt, NOTHING);
                if (result.attempt() == attempt.attempt()) {
                  ownCompletions.add(result);
                } else {
                  l.fail(attempt, "another attempt completed first");
                }
              } catch (FencedOutException e) {
                fenced.incrementAndGet();
                l.fail(attempt, "fenced out");
              }
            }
          } catch (Throwable e) {
            unexpected.add(e.toString());
          } finally {
            done.countDown();
          }
        }, "racer-" + t);
        th.start();
      }
      go.countDown();
      assertThat(done.await(3, TimeUnit.MINUTES)).as("every racer stopped").isTrue();
      assertThat(unexpected).as("racers failed unexpectedly").isEmpty();
      assertThat(ownCompletions).as("completions of %s returned as the caller's own", run)
          .hasSize(1);
      RunRecord completed = ownCompletions.peek();
      List<RunRecord> attempts = clients.get(0).history(job, RunKeys.MAX_HISTORY).stream()
          .filter(a -> a.run().equals(run)).toList();
      assertThat(attempts).filteredOn(a -> a.status() == RunRecord.Status.COMPLETED)
          .as("COMPLETED records of %s", run).containsExactly(completed);
      assertThat(attempts).extracting(RunRecord::token)
          .as("tokens of the attempts of %s, completed under %d", run, completed.token())
          .allMatch(token -> token <= completed.token());
      assertThat(clients.get(1).completion(job, run)).contains(completed);
      System.out.printf("race %s: %d attempts recorded, %d fenced out, completed by attempt %d"
          + " under token %d%n", run, attempts.size(), fenced.get(), completed.attempt(),
          completed.token());
    }
    List<RunRecord> all = clients.get(2).history("race", RunKeys.MAX_HISTORY);
    assertThat(all).extracting(RunRecord::attempt).as("attempt ids, newest first, unique")
        .doesNotHaveDuplicates().isSortedAccordingTo((a, b) -> Long.compare(b, a));
  }

  // ---------------------------------------------------------------- names and namespace

  @Test
  void hostileNamesAreDataAndEveryKeyStaysInTheReservedNamespace() {
    ConsulRunLedger l = ledger();
    List<String> jobs = List.of("a/b", "a~2Fb", "a%2Fb", "..", ".", ".once", "a b", "%20",
        "x/../../y", "✓ {tag} 'q' \"dq\" \\", "\uD83D\uDE00", "leases", "fence",
        "✓".repeat(RunKeys.MAX_JOB_LENGTH));
    List<String> runs = List.of("r", "../r", "r/", "done/r", "%2e%2e", " r", "\uD83D\uDE00");
    long token = 1;
    for (String job : jobs) {
      for (String run : runs) {
        RunRecord a = l.begin(job, run, token++, HolderId.generate());
        assertThat(a.status()).as("(%s, %s) begins afresh", job, run)
            .isEqualTo(RunRecord.Status.STARTED);
        RunRecord done = l.complete(a, NOTHING);
        assertThat(done.job()).isEqualTo(job);
        assertThat(done.run()).isEqualTo(run);
      }
    }
    List<String> newestFirst = new ArrayList<>(runs);
    java.util.Collections.reverse(newestFirst);
    for (String job : jobs) {
      List<RunRecord> history = l.history(job, RunKeys.MAX_HISTORY);
      assertThat(history).as("history of '%s' holds its own runs only", job)
          .extracting(RunRecord::run).containsExactlyElementsOf(newestFirst);
      for (String run : runs) {
        assertThat(l.completion(job, run)).get().extracting(RunRecord::job, RunRecord::run)
            .containsExactly(job, run);
      }
    }
    Set<String> folders = jobs.stream().map(l::folderOf).collect(Collectors.toSet());
    assertThat(folders).as("one folder per job").hasSize(jobs.size());
    List<String> keys = keysUnderPrefix();
    assertThat(keys).as("every key the ledger wrote is in <prefix>/.once/<E(job)>/")
        .isNotEmpty()
        .allMatch(k -> k.startsWith(prefix + "/.once/"))
        .allMatch(k -> folders.stream().anyMatch(k::startsWith));
    assertThat(keys).as("per job: fence, counter, and an attempt and a completion per run")
        .hasSize(jobs.size() * (2 + 2 * runs.size()));
    try (ConsulLeaseStore store = ConsulLeaseStore.builder(admin).keyPrefix(prefix).build()) {
      for (String job : jobs) {
        for (String lease : List.of(job, RunKeys.leaseName(job))) {
          assertThat(store.keyOf(lease)).as("lease '%s' is kept outside the ledger's namespace",
              lease).doesNotStartWith(prefix + "/.once/").isNotIn(keys);
        }
      }
    }
    ConsulFence fence = ConsulFence.of(admin, Duration.ofSeconds(2), prefix);
    for (String key : keys.subList(0, 3)) {
      assertThatThrownBy(() -> fence.put(key, "x", Long.MAX_VALUE))
          .as("a fenced resource write onto a ledger key").isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("reserved");
    }
  }

  @Test
  void aValueThatTheLedgerDidNotWriteIsReportedWithItsKey() {
    ConsulRunLedger l = ledger();
    String job = "garbage";
    l.complete(l.begin(job, "r", 5, HolderId.generate()), NOTHING);
    String fenceKey = l.folderOf(job) + "fence";
    admin.keyValueClient().putValue(fenceKey, "not json");
    assertThatThrownBy(() -> l.begin(job, "s", 6, HolderId.generate()))
        .isInstanceOf(LeaseException.class).hasMessageContaining(fenceKey)
        .hasMessageContaining("not JSON");
  }

  // ---------------------------------------------------------------- out-of-band delete

  /**
   * What the class comment promises for {@code consul kv delete -recurse <prefix>/.once/}: the job's
   * fence, completions and history are forgotten (the run can run again, and a token lower than
   * before may begin); an attempt begun before the delete can neither complete nor fail, even when
   * its id has been handed out again. Deleting only the attempt counter loses nothing: ids go on
   * after the highest attempt recorded.
   */
  @Test
  void anOutOfBandDeleteForgetsTheJobButAnAttemptFromBeforeItCannotCompleteOntoANewOne() {
    ConsulRunLedger l = ledger();
    String job = "deleted";
    HolderId h = HolderId.generate();
    RunRecord first = l.complete(l.begin(job, "r", 50, h), NOTHING);
    RunRecord inFlight = l.begin(job, "s", 50, h);
    assertThat(inFlight.attempt()).isEqualTo(2);

    admin.keyValueClient().deleteKey(l.folderOf(job) + "attempt");
    RunRecord third = l.begin(job, "t", 50, h);
    assertThat(third.attempt()).as("ids go on past the highest recorded attempt").isEqualTo(3);

    admin.keyValueClient().deleteKeys(l.folderOf(job));
    assertThat(l.completion(job, "r")).as("the completion is forgotten").isEmpty();
    assertThat(l.history(job, 10)).as("and the history").isEmpty();
    RunRecord again = l.begin(job, "r", 7, HolderId.generate());
    assertThat(again.status()).as("the fence is forgotten too: token 7 < 50 begins")
        .isEqualTo(RunRecord.Status.STARTED);
    assertThat(again.attempt()).as("ids start again").isEqualTo(1);
    assertThat(first.attempt()).isEqualTo(1);

    RunRecord sameId = l.begin(job, "s", 8, HolderId.generate());
    assertThat(sameId.attempt()).isEqualTo(inFlight.attempt());
    AtomicInteger ran = new AtomicInteger();
    assertThatThrownBy(() -> l.complete(inFlight, none -> ran.incrementAndGet()))
        .as("the attempt from before the delete, whose id was handed out again")
        .isInstanceOf(LeaseException.class).hasMessageContaining("another attempt");
    assertThat(ran).as("the work ran (a key-value ledger records after the work)").hasValue(1);
    assertThatThrownBy(() -> l.fail(inFlight, "x")).isInstanceOf(LeaseException.class);
    assertThat(l.completion(job, "s")).as("nothing was recorded for it").isEmpty();
    assertThat(l.history(job, 10)).extracting(RunRecord::status)
        .containsExactly(RunRecord.Status.STARTED, RunRecord.Status.STARTED);
    assertThatThrownBy(() -> l.complete(third, NOTHING)).as("an attempt whose record is gone")
        .isInstanceOf(LeaseException.class).hasMessageContaining("gone");
    assertThat(l.complete(sameId, NOTHING).status()).isEqualTo(RunRecord.Status.COMPLETED);
  }

  // ---------------------------------------------------------------- bounded calls

  @Test
  void everyCallToAStalledAgentFailsWithinItsBoundAndTheLedgerRecovers() throws Exception {
    try (TcpProxy proxy = new TcpProxy(URI.create(ConsulServers.sharedUrl()).getPort())) {
      ConsulRunLedger l = ledger(ConsulRunLedger.builder("http://127.0.0.1:" + proxy.port())
          .keyPrefix(prefix).callTimeout(CALL_TIMEOUT));
      String job = "stalled";
      HolderId h = HolderId.generate();
      RunRecord[] started = new RunRecord[1];
      await("works before the stall (a cold JVM's first calls may take longer)")
          .atMost(Duration.ofSeconds(30)).ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> (started[0] = l.begin(job, "warm", 10, h)) != null);
      proxy.stall();
      AtomicInteger worked = new AtomicInteger();
      Map<String, Runnable> calls = Map.of(
          "completion", () -> l.completion(job, "r"),
          "begin", () -> l.begin(job, "r", 11, h),
          "complete", () -> l.complete(started[0], none -> worked.incrementAndGet()),
          "fail", () -> l.fail(started[0], "boom"),
          "history", () -> l.history(job, 10));
      calls.forEach((name, call) -> {
        long start = System.nanoTime();
        assertThatThrownBy(call::run).as(name).isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("127.0.0.1:" + proxy.port());
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as(name + " gave up in time")
            .isLessThan(CALL_BOUND);
      });
      assertThat(worked).as("complete ran the work before its record timed out").hasValue(1);
      proxy.forward();
      await("the ledger works again").atMost(Duration.ofSeconds(60))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> l.complete(started[0], NOTHING).status() == RunRecord.Status.COMPLETED);
    }
  }

  @Test
  void anAgentThatIsNotThereFailsFastNamingTheUrlAndBadInputFailsBeforeAnythingIsSent() {
    int closed = FreePorts.pick();
    String url = "http://127.0.0.1:" + closed;
    ConsulRunLedger l = ledger(ConsulRunLedger.builder(url).callTimeout(Duration.ofMillis(500)));
    long start = System.nanoTime();
    assertThatThrownBy(() -> l.begin("j", "r", 1, HolderId.generate()))
        .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining(url)
        .hasMessageContaining("outcome is unknown");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));

    HolderId h = HolderId.generate();
    RunRecord started = new RunRecord("j", "r", 1, 1, h, java.time.Instant.now(), null,
        RunRecord.Status.STARTED, null);
    RunRecord completed = new RunRecord("j", "r", 1, 1, h, java.time.Instant.now(),
        java.time.Instant.now(), RunRecord.Status.COMPLETED, null);
    AtomicInteger ran = new AtomicInteger();
    List<Runnable> bad = List.of(
        () -> l.begin("j", "r", 0, h),
        () -> l.begin(" ", "r", 1, h),
        () -> l.begin("j\uD800", "r", 1, h),
        () -> l.begin("j", "r\u0000", 1, h),
        () -> l.begin("x".repeat(RunKeys.MAX_JOB_LENGTH + 1), "r", 1, h),
        () -> l.completion("j", "r\uDC00"),
        () -> l.history("j", 0),
        () -> l.history("j", RunKeys.MAX_HISTORY + 1),
        () -> l.complete(completed, none -> ran.incrementAndGet()),
        () -> l.fail(completed, "x"));
    for (Runnable r : bad) {
      assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(ran).as("work of a bad complete() is not run").hasValue(0);
    assertThatThrownBy(() -> l.begin("j", "r", 1, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> l.fail(started, null)).isInstanceOf(NullPointerException.class);

    assertThatThrownBy(() -> ConsulRunLedger.builder("consul:8500"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("http://host:port");
    assertThatThrownBy(() -> ConsulRunLedger.builder(url).keyPrefix("a//b"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
    assertThatThrownBy(() -> ConsulRunLedger.builder(url).callTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeout");
    assertThatThrownBy(() -> ConsulRunLedger.builder(admin).aclToken("t"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("withTokenAuth");

    l.close();
    assertThatThrownBy(() -> l.completion("j", "r")).isInstanceOf(LeaseStoreClosedException.class);
  }

  @Test
  void theFactoryMirrorsTheStoreFactoryAndRefusesUnknownSettingsByName() {
    ConsulRunLedgerFactory factory = new ConsulRunLedgerFactory();
    assertThatThrownBy(() -> factory.open(Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'url'");
    assertThatThrownBy(() -> factory.open(Map.of("url", "http://127.0.0.1:1", "keyprefix", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown setting 'keyprefix'");
    assertThatThrownBy(() -> factory.open(Map.of("url", "http://127.0.0.1:1",
        "callTimeoutMs", "2s"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("callTimeoutMs");
    ConsulRunLedger l = factory.open(Map.of("url", ConsulServers.sharedUrl(), "keyPrefix", prefix,
        "callTimeoutMs", "1500"));
    closeables.add(l);
    assertThat(l.folderOf("job")).isEqualTo(prefix + "/.once/job/");
    RunRecord a = l.begin("job", "r", 3, HolderId.generate());
    assertThat(ledger().completion("job", "r")).isEmpty();
    RunRecord done = l.complete(a, NOTHING);
    assertThat(ledger().completion("job", "r")).as("another client on the same prefix sees it")
        .contains(done);
    assertThat(done.finished()).isAfterOrEqualTo(done.started());
  }
}
