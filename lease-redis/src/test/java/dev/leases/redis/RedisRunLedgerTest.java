package dev.leases.redis;

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
import dev.leases.tck.servers.TcpProxy;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@link RedisRunLedger} on the shared server: races, names, keys, faults, out-of-band deletes. */
class RedisRunLedgerTest {

  private static final Duration TIMEOUT = Duration.ofMillis(500);
  /** What "within the timeout" allows on top of it for scheduling on a busy 2-core machine. */
  private static final Duration SLACK = Duration.ofMillis(1500);
  private static final List<String> HOSTILE = List.of("{", "}", "}{", "a}b{c", "{x}", "with space",
      "ünïcødé ✓ 漢字", "emoji 😀", "%2F", "a/b", "a%2Fb", "a:b", "*?[]\\", "1:status", ":ledger:done",
      "' OR 1=1 --");

  private static RedisAdmin admin;
  private static RedisRunLedger ledger;

  @BeforeAll
  static void open() {
    admin = RedisAdmin.connect(RedisServers.sharedUri());
    ledger = RedisRunLedger.builder(RedisServers.sharedUri()).build();
  }

  @AfterAll
  static void close() {
    ledger.close();
    admin.close();
  }

  /** A ledger whose connection goes through {@code proxy}, each call bounded by TIMEOUT. */
  private static RedisRunLedger via(TcpProxy proxy) {
    return RedisRunLedger.builder("redis://127.0.0.1:" + proxy.port()).commandTimeout(TIMEOUT)
        .build();
  }

  private static String job() {
    return "ledger-" + UUID.randomUUID();
  }

  @Test
  void manyThreadsRacingOneRunUnderIncreasingTokensCompleteItOnceAndNeverUnderALowerToken()
      throws Exception {
    int threads = 12;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 15; round++) {
        String job = job();
        List<Long> tokens = new ArrayList<>();
        for (long t = 1; t <= threads; t++) {
          tokens.add(1000 + t);
        }
        Collections.shuffle(tokens);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Optional<RunRecord>>> results = new ArrayList<>();
        for (long token : tokens) {
          results.add(pool.submit(() -> {
            go.await();
            try {
              RunRecord mine = ledger.begin(job, "r", token, HolderId.generate());
              if (mine.status() != RunRecord.Status.STARTED) {
                return Optional.<RunRecord>empty();
              }
              RunRecord done = ledger.complete(mine, none -> {});
              return done.attempt() == mine.attempt() ? Optional.of(done) : Optional.empty();
            } catch (FencedOutException e) {
              return Optional.empty();
            }
          }));
        }
        go.countDown();
        List<RunRecord> completed = new ArrayList<>();
        for (Future<Optional<RunRecord>> f : results) {
          f.get(60, TimeUnit.SECONDS).ifPresent(completed::add);
        }
        assertThat(completed).as("round %d: exactly one attempt completed", round).hasSize(1);
        RunRecord winner = completed.get(0);
        assertThat(ledger.completion(job, "r")).contains(winner);
        List<RunRecord> history = ledger.history(job, 100);
        assertThat(history).filteredOn(r -> r.status() == RunRecord.Status.COMPLETED)
            .containsExactly(winner);
        assertThat(history).as("round %d: no attempt under a higher token than the winner's (%d)"
            + " began before it completed, or the winner would have been fenced out", round,
            winner.token()).allSatisfy(r -> assertThat(r.token()).isLessThanOrEqualTo(winner.token()));
        assertThat(history).extracting(RunRecord::attempt).as("ids unique, newest first")
            .doesNotHaveDuplicates().isSortedAccordingTo(Collections.reverseOrder());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void hostileJobAndRunNamesAreDataWithTheirOwnRecords() {
    String suffix = UUID.randomUUID().toString();
    Set<String> tags = new HashSet<>();
    long token = 1;
    for (String base : HOSTILE) {
      String job = base + suffix;
      for (String run : HOSTILE) {
        RunRecord started = ledger.begin(job, run, token++, HolderId.generate());
        assertThat(started.status()).as("%s / %s is new", job, run)
            .isEqualTo(RunRecord.Status.STARTED);
        RunRecord done = ledger.complete(started, none -> {});
        assertThat(done.run()).isEqualTo(run);
        assertThat(done.job()).isEqualTo(job);
      }
      assertThat(ledger.history(job, 100)).extracting(RunRecord::run)
          .containsExactlyElementsOf(reversed(HOSTILE));
      for (String run : HOSTILE) {
        assertThat(ledger.completion(job, run)).get().extracting(RunRecord::run).isEqualTo(run);
      }
      String fence = ledger.keysOf(job).get(0);
      assertThat(tags.add(fence.substring(0, fence.indexOf('}') + 1)))
          .as("job %s has a tag of its own", job).isTrue();
    }
    assertThat(ledger.completion("never-" + suffix, "r")).isEmpty();
  }

  private static List<String> reversed(List<String> l) {
    List<String> r = new ArrayList<>(l);
    Collections.reverse(r);
    return r;
  }

  @Test
  void everyKeyIsInTheReservedNamespaceAndOneSlotPerJob() {
    String prefix = "ledger-ns-" + UUID.randomUUID().toString().substring(0, 8);
    try (RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri())
        .keyPrefix(prefix).build()) {
      RedisRunLedger onStore = RedisRunLedger.on(store);
      Set<String> expected = new HashSet<>();
      long token = 1;
      for (String job : List.of("plain", "{x}", "a}b", "with space ✓", "a/b")) {
        RunRecord failed = onStore.begin(job, "r1", token++, HolderId.generate());
        onStore.fail(failed, "boom");
        onStore.complete(onStore.begin(job, "r1", token++, HolderId.generate()), none -> {});
        onStore.history(job, 10);
        List<String> keys = onStore.keysOf(job);
        assertThat(keys).allSatisfy(k -> {
          assertThat(k).startsWith("{" + prefix + ":once/");
          assertThat(KeyLayout.isStoreKey(k)).as("%s is reserved", k).isTrue();
        });
        int slot = SlotHash.getSlot(keys.get(0));
        assertThat(keys).extracting(SlotHash::getSlot).as("keys of %s", job).containsOnly(slot);
        assertThat(store.keysOf(RunKeys.leaseName(job))).extracting(SlotHash::getSlot)
            .as("the job's lease is in the same slot").containsOnly(slot);
        expected.addAll(keys);
      }
      Set<String> found = new HashSet<>();
      ScanIterator.scan(admin.sync(), ScanArgs.Builder.matches("*" + prefix + "*").limit(500))
          .forEachRemaining(found::add);
      assertThat(found).as("every key the ledger wrote, and nothing else").isEqualTo(expected);
      assertThat(found.stream().map(admin.sync()::type).collect(Collectors.toSet()))
          .containsOnly("string", "hash");
      store.close();
      assertThatThrownBy(() -> onStore.completion("plain", "r1"))
          .isInstanceOf(LeaseStoreClosedException.class);
    }
  }

  @Test
  void aStalledServerFailsEveryCallWithinTheTimeoutAndTheLateScriptsChangeNothingTheyShouldNot()
      throws Exception {
    try (TcpProxy proxy = new TcpProxy(RedisServers.sharedPort());
        RedisRunLedger stalled = via(proxy)) {
      everyOperationOnce(stalled); // every script is in the server's cache: no NOSCRIPT later
      String job = job();
      RunRecord attempt = stalled.begin(job, "r", 5, HolderId.generate());
      proxy.stall();
      AtomicBoolean ran = new AtomicBoolean();
      List<Runnable> calls = List.of(
          () -> stalled.begin(job, "other", 6, HolderId.generate()),
          () -> stalled.completion(job, "r"),
          () -> stalled.history(job, 10),
          () -> stalled.fail(attempt, "x"),
          () -> stalled.complete(attempt, none -> ran.set(true)));
      for (Runnable call : calls) {
        long start = System.nanoTime();
        assertThatThrownBy(call::run).isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("job '" + job + "'").hasMessageContaining("outcome is unknown");
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
      }
      assertThat(ran).as("complete ran the work before its bounded record call").isTrue();
      proxy.forward();
      // the stalled scripts arrive late, in order: begin(6) raised the fence, so the fail of the
      // token-5 attempt lands and its completion is refused
      await().atMost(Duration.ofSeconds(20))
          .ignoreExceptionsInstanceOf(LeaseStoreUnavailableException.class)
          .until(() -> stalled.history(job, 10).size() == 2);
      assertThat(ledger.completion(job, "r")).isEmpty();
      assertThat(ledger.history(job, 10)).extracting(RunRecord::run, RunRecord::status)
          .containsExactly(org.assertj.core.groups.Tuple.tuple("other", RunRecord.Status.STARTED),
              org.assertj.core.groups.Tuple.tuple("r", RunRecord.Status.FAILED));
    }
  }

  private static void everyOperationOnce(RedisRunLedger l) {
    String job = job();
    l.fail(l.begin(job, "a", 1, HolderId.generate()), "x");
    l.complete(l.begin(job, "a", 1, HolderId.generate()), n -> {});
    assertThat(l.completion(job, "a")).isPresent();
    assertThat(l.history(job, 10)).hasSize(2);
  }

  @Test
  void aFlushedScriptCacheIsRecoveredTransparently() {
    admin.sync().scriptFlush();
    everyOperationOnce(ledger);
  }

  @Test
  void connectingToAStalledServerIsBoundedToo() throws Exception {
    try (TcpProxy proxy = new TcpProxy(RedisServers.sharedPort());
        RedisRunLedger stalled = via(proxy)) {
      proxy.stall();
      long start = System.nanoTime();
      assertThatThrownBy(() -> stalled.completion(job(), "r"))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
    }
  }

  @Test
  void anOutOfBandDeleteOfAJobsKeysForgetsItsRunsAndFence() {
    String job = job();
    RunRecord done = ledger.complete(ledger.begin(job, "r", 100, HolderId.generate()), n -> {});
    assertThatThrownBy(() -> ledger.begin(job, "r", 99, HolderId.generate()))
        .isInstanceOf(FencedOutException.class);
    assertThat(admin.sync().del(ledger.keysOf(job).toArray(String[]::new))).isEqualTo(4);

    assertThat(ledger.completion(job, "r")).as("the completion is forgotten").isEmpty();
    assertThat(ledger.history(job, 10)).isEmpty();
    RunRecord again = ledger.begin(job, "r", 50, HolderId.generate());
    assertThat(again.status()).as("the run is begun again, even under a lower token: the fence"
        + " went with the keys").isEqualTo(RunRecord.Status.STARTED);
    assertThat(ledger.complete(again, n -> {}).token()).isEqualTo(50);
    assertThat(done.token()).isEqualTo(100);
  }

  @Test
  void deletingOnlyTheAttemptsLeavesCompletedRunsDoneAndRefusesToGuess() {
    String job = job();
    ledger.complete(ledger.begin(job, "r", 10, HolderId.generate()), n -> {});
    List<String> keys = ledger.keysOf(job);
    admin.sync().del(keys.get(2));
    for (Runnable call : List.<Runnable>of(() -> ledger.completion(job, "r"),
        () -> ledger.begin(job, "r", 20, HolderId.generate()))) {
      assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("is recorded as completed by attempt 1")
          .hasMessageContaining("not run again");
    }
    assertThat(admin.sync().get(keys.get(0))).as("the refused begin wrote nothing").isEqualTo("10");
    // other runs go on; ids continue after the counter
    RunRecord other = ledger.begin(job, "s", 20, HolderId.generate());
    assertThat(other.attempt()).isEqualTo(2);
  }

  @Test
  void deletingOnlyTheCounterKeepsAttemptIdsUnique() {
    String job = job();
    long first = ledger.begin(job, "a", 1, HolderId.generate()).attempt();
    long second = ledger.begin(job, "b", 1, HolderId.generate()).attempt();
    admin.sync().del(ledger.keysOf(job).get(1));
    assertThat(ledger.history(job, 10)).extracting(RunRecord::attempt)
        .containsExactly(second, first);
    assertThat(ledger.begin(job, "c", 1, HolderId.generate()).attempt()).isGreaterThan(second);
    admin.sync().set(ledger.keysOf(job).get(1), "0"); // lowered by hand
    long fourth = ledger.begin(job, "d", 1, HolderId.generate()).attempt();
    assertThat(ledger.history(job, 10)).extracting(RunRecord::attempt).doesNotHaveDuplicates()
        .hasSize(4).contains(fourth);
  }

  @Test
  void aForeignKeyStopsTheScriptBeforeAnyWrite() {
    String job = job();
    List<String> keys = ledger.keysOf(job);
    ledger.begin(job, "r", 5, HolderId.generate());
    admin.sync().del(keys.get(3));
    admin.sync().rpush(keys.get(3), "not a hash");
    assertThatThrownBy(() -> ledger.begin(job, "r", 7, HolderId.generate()))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(keys.get(3))
        .hasMessageContaining("holds a list");
    assertThat(admin.sync().get(keys.get(0))).as("fence unmoved").isEqualTo("5");
    assertThat(admin.sync().get(keys.get(1))).as("no attempt allocated").isEqualTo("1");
  }

  @Test
  void workThatThrowsIsRethrownUnchangedAndRecordsNothing() {
    String job = job();
    RunRecord attempt = ledger.begin(job, "r", 3, HolderId.generate());
    IllegalStateException boom = new IllegalStateException("boom");
    assertThatThrownBy(() -> ledger.complete(attempt, n -> {
      throw boom;
    })).isSameAs(boom);
    assertThat(ledger.history(job, 10)).containsExactly(attempt);
    RunRecord failed = ledger.fail(attempt, "x".repeat(RunRecord.MAX_FAILURE_LENGTH + 10));
    assertThat(failed.status()).isEqualTo(RunRecord.Status.FAILED);
    assertThat(failed.failure()).hasSize(RunRecord.MAX_FAILURE_LENGTH);
    assertThat(failed.finished()).isAfterOrEqualTo(failed.started());
    assertThat(ledger.fail(attempt, "again")).as("unchanged once finished").isEqualTo(failed);
    assertThatThrownBy(() -> ledger.complete(attempt, n -> {}))
        .as("completing a FAILED attempt").isInstanceOf(LeaseException.class)
        .hasMessageContaining("not a STARTED attempt");
  }

  @Test
  void anAttemptThisLedgerNeverBeganIsRefused() {
    String job = job();
    RunRecord real = ledger.begin(job, "r", 3, HolderId.generate());
    RunRecord forged = new RunRecord(job, "other", real.attempt(), 3, real.holder(), real.started(),
        null, RunRecord.Status.STARTED, null);
    assertThatThrownBy(() -> ledger.fail(forged, "x")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not in");
    List<String> ran = new CopyOnWriteArrayList<>();
    assertThatThrownBy(() -> ledger.complete(forged, n -> ran.add("ran")))
        .isInstanceOf(LeaseException.class);
    assertThat(ledger.completion(job, "other")).isEmpty();
    assertThat(ledger.history(job, 10)).containsExactly(real);
  }

  @Test
  void badInputIsRefusedBeforeAnythingIsSent() throws Exception {
    try (TcpProxy proxy = new TcpProxy(RedisServers.sharedPort());
        RedisRunLedger watched = via(proxy)) {
      HolderId h = HolderId.generate();
      RunRecord done = new RunRecord("j", "r", 1, 1, h, java.time.Instant.EPOCH,
          java.time.Instant.EPOCH, RunRecord.Status.COMPLETED, null);
      List<Runnable> bad = List.of(
          () -> watched.begin("", "r", 1, h),
          () -> watched.begin("j", "r", 0, h),
          () -> watched.begin("j", "r", -1, h),
          () -> watched.begin("j\uD800", "r", 1, h),
          () -> watched.begin("j", "x".repeat(RunKeys.MAX_RUN_LENGTH + 1), 1, h),
          () -> watched.begin("x".repeat(RunKeys.MAX_JOB_LENGTH + 1), "r", 1, h),
          () -> watched.completion("j", "r\uDC00"),
          () -> watched.completion("j", "line\nbreak"),
          () -> watched.completion("nul\0byte", "r"),
          () -> watched.begin("j", " ", 1, h),
          () -> watched.history("j", 0),
          () -> watched.history("j", RunKeys.MAX_HISTORY + 1),
          () -> watched.complete(done, n -> {}),
          () -> watched.fail(done, "x"));
      for (Runnable call : bad) {
        assertThatThrownBy(call::run).isInstanceOf(IllegalArgumentException.class);
      }
      assertThat(proxy.clientBytes()).as("nothing was sent, not even a connection").isEmpty();
    }
    assertThatThrownBy(() -> RedisRunLedger.builder("redis://x").keyPrefix("a{b"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
    assertThatThrownBy(() -> RedisRunLedger.builder("redis://x")
        .commandTimeout(Duration.ofHours(1))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theFactoryMirrorsTheStoresSettingsAndRefusesUnknownOnesByName() {
    RedisRunLedgerFactory factory = new RedisRunLedgerFactory();
    assertThatThrownBy(() -> factory.open(Map.of(RedisLeaseStoreFactory.URI, "redis://x",
        "keyPrefx", "p"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'keyPrefx'").hasMessageContaining("run ledger");
    assertThatThrownBy(() -> factory.open(Map.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(RedisLeaseStoreFactory.URI);
    assertThatThrownBy(() -> factory.open(Map.of(RedisLeaseStoreFactory.URI, "redis://x",
        RedisLeaseStoreFactory.COMMAND_TIMEOUT_MS, "soon")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(RedisLeaseStoreFactory.COMMAND_TIMEOUT_MS);
    String prefix = "ledger-factory-" + UUID.randomUUID().toString().substring(0, 8);
    try (RedisRunLedger opened = factory.open(Map.of(RedisLeaseStoreFactory.URI,
        RedisServers.sharedUri(), RedisLeaseStoreFactory.KEY_PREFIX, prefix,
        RedisLeaseStoreFactory.COMMAND_TIMEOUT_MS, "700"))) {
      assertThat(opened.commandTimeout()).isEqualTo(Duration.ofMillis(700));
      assertThat(opened.keysOf("j").get(0)).isEqualTo("{" + prefix + ":once/j}:ledger:fence");
      opened.begin("j", "r", 1, HolderId.generate());
      assertThat(admin.sync().exists(opened.keysOf("j").get(0))).isEqualTo(1);
      opened.close();
      assertThatThrownBy(() -> opened.completion("j", "r"))
          .isInstanceOf(LeaseStoreClosedException.class).hasMessageContaining("RedisRunLedger");
    }
  }

  @Test
  void aFencedWriteCannotTouchTheLedgersKeys() {
    for (String key : ledger.keysOf(job())) {
      assertThatThrownBy(() -> RedisFence.fenceKeyOf(key)).as(key)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("run ledger");
    }
  }
}
