package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseException;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.once.RunRecord;
import dev.leases.tck.servers.TcpProxy;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link EtcdRunLedger} against a real etcd: races, names, key layout, stalls, deletes. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class EtcdRunLedgerTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  private static String prefix;
  private static Client admin;
  private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void connect() {
    prefix = "ledger-" + random();
    admin = Client.builder().endpoints(EtcdServers.endpointList().toArray(String[]::new)).build();
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  private static String random() {
    byte[] b = new byte[5];
    ThreadLocalRandom.current().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  private EtcdRunLedger ledger(Duration callTimeout) {
    return ledger(EtcdServers.endpoints(), callTimeout);
  }

  private EtcdRunLedger ledger(String endpoints, Duration callTimeout) {
    return ledger(endpoints, prefix, callTimeout);
  }

  private EtcdRunLedger ledger(String endpoints, String keyPrefix, Duration callTimeout) {
    EtcdRunLedger l = EtcdRunLedger.builder(endpoints.split(",")).keyPrefix(keyPrefix)
        .callTimeout(callTimeout).build();
    closeables.add(l);
    return l;
  }

  private static List<String> keysUnder(String keyPrefix) throws Exception {
    List<String> keys = new ArrayList<>();
    for (KeyValue kv : admin.getKVClient().get(utf8(keyPrefix),
        GetOption.builder().isPrefix(true).withKeysOnly(true).build())
        .get(10, TimeUnit.SECONDS).getKvs()) {
      keys.add(kv.getKey().toString(StandardCharsets.UTF_8));
    }
    return keys;
  }

  private static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static String text(ByteSequence b) {
    return b.toString(StandardCharsets.UTF_8);
  }

  // ---------------------------------------------------------------- atomicity

  /**
   * Many threads, on several clients, each take the next token and begin then complete one run:
   * exactly one completion, and every other attempt's token is below it. An attempt above it would
   * mean a lower token completed after a higher one began (a begin after the completion answers
   * the completion and records no attempt).
   */
  @Test
  void racingRunnersUnderIncreasingTokensCompleteARunOnceAndNeverBelowAHigherBegin()
      throws Exception {
    int threads = 8;
    int rounds = 12;
    List<EtcdRunLedger> clients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      clients.add(ledger(Duration.ofSeconds(30)));
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    AtomicInteger fencedTotal = new AtomicInteger();
    AtomicInteger alreadyTotal = new AtomicInteger();
    AtomicInteger ranTotal = new AtomicInteger();
    try {
      for (int round = 0; round < rounds; round++) {
        String job = "race-" + random();
        AtomicLong tokens = new AtomicLong();
        CountDownLatch go = new CountDownLatch(1);
        List<Long> ownCompletions = new CopyOnWriteArrayList<>();
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          EtcdRunLedger ledger = clients.get(t % clients.size());
          HolderId holder = HolderId.generate();
          futures.add(pool.submit(() -> {
            go.await();
            long token = tokens.incrementAndGet();
            RunRecord attempt;
            try {
              attempt = ledger.begin(job, "r", token, holder);
            } catch (FencedOutException e) {
              fencedTotal.incrementAndGet();
              return null;
            }
            if (attempt.status() == RunRecord.Status.COMPLETED) {
              alreadyTotal.incrementAndGet();
              return null;
            }
            try {
              RunRecord done = ledger.complete(attempt, none -> ranTotal.incrementAndGet());
              if (done.attempt() == attempt.attempt()) {
                ownCompletions.add(token);
              } else {
                alreadyTotal.incrementAndGet();
                ledger.fail(attempt, "attempt " + done.attempt() + " completed first");
              }
            } catch (FencedOutException e) {
              fencedTotal.incrementAndGet();
              assertThat(e.highestToken()).isGreaterThan(token);
              ledger.fail(attempt, "fenced out");
            }
            return null;
          }));
        }
        go.countDown();
        for (Future<?> f : futures) {
          f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
        assertThat(ownCompletions).as("complete() calls that recorded their own attempt, job %s",
            job).hasSize(1);
        long completed = ownCompletions.get(0);
        EtcdRunLedger reader = clients.get(0);
        assertThat(reader.completion(job, "r")).get().extracting(RunRecord::token)
            .isEqualTo(completed);
        List<RunRecord> history = reader.history(job, 100);
        assertThat(history).filteredOn(r -> r.status() == RunRecord.Status.COMPLETED)
            .as("completion records").hasSize(1);
        assertThat(history).filteredOn(r -> r.status() != RunRecord.Status.COMPLETED)
            .as("an attempt that began under a token above the completed one (%s) means a lower"
                + " token completed after a higher began; history %s", completed, history)
            .allSatisfy(r -> assertThat(r.token()).isLessThan(completed));
        assertThat(history).extracting(RunRecord::attempt).as("attempt ids, newest first")
            .isSortedAccordingTo((a, b) -> Long.compare(b, a)).doesNotHaveDuplicates();
      }
    } finally {
      pool.shutdownNow();
    }
    System.out.println("[etcd-run-ledger] race: " + rounds + " rounds x " + threads
        + " threads: completed " + rounds + ", fenced " + fencedTotal + ", already-completed "
        + alreadyTotal + ", work ran " + ranTotal + " times");
  }

  /**
   * Attempts under one token (one tenure beginning the run again, e.g. after a lost answer) pass
   * the fence alike: only the completion's own compare keeps a second completion out.
   */
  @Test
  void racingAttemptsUnderOneTokenCompleteARunOnce() throws Exception {
    int threads = 8;
    List<EtcdRunLedger> clients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      clients.add(ledger(Duration.ofSeconds(30)));
    }
    HolderId holder = HolderId.generate();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 8; round++) {
        String job = "same-token-" + random();
        List<RunRecord> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          started.add(clients.get(t % clients.size()).begin(job, "r", 7, holder));
        }
        CountDownLatch go = new CountDownLatch(1);
        List<Future<RunRecord>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          EtcdRunLedger ledger = clients.get(t % clients.size());
          RunRecord attempt = started.get(t);
          results.add(pool.submit(() -> {
            go.await();
            return ledger.complete(attempt, none -> {});
          }));
        }
        go.countDown();
        List<Long> answered = new ArrayList<>();
        for (Future<RunRecord> f : results) {
          answered.add(f.get(WAIT.toSeconds(), TimeUnit.SECONDS).attempt());
        }
        assertThat(answered).as("every complete() answers the one completion, job %s", job)
            .containsOnly(answered.get(0));
        assertThat(clients.get(0).history(job, 100))
            .filteredOn(r -> r.status() == RunRecord.Status.COMPLETED).as("completion records")
            .singleElement().extracting(RunRecord::attempt).isEqualTo(answered.get(0));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  // ---------------------------------------------------------------- names and keys

  @Test
  void hostileJobAndRunNamesAreDataAndEveryKeyStaysInItsJobsReservedNamespace() throws Exception {
    String tag = random();
    List<String> jobs = List.of("a-" + tag, "a-" + tag + "/attempt", "a-" + tag + "%2Fattempt",
        "a-" + tag + "/done/x", "../once/a-" + tag, "✓ {" + tag + "} 'q' \"dq\" \\ %00");
    List<String> runs = List.of("r", "r/x", "%", "../..", "done/r", "attempt/0000000000000000001",
        "💥", "r%2Fx");
    String own = prefix + "-names"; // this test alone writes under it
    EtcdRunLedger ledger = ledger(EtcdServers.endpoints(), own, Duration.ofSeconds(10));
    long token = 1;
    for (String job : jobs) {
      for (String run : runs) {
        RunRecord a = ledger.begin(job, run, token++, HolderId.generate());
        assertThat(ledger.complete(a, none -> {}).status()).isEqualTo(RunRecord.Status.COMPLETED);
      }
    }
    KeyLayout layout = new KeyLayout(own);
    List<String> jobPrefixes = jobs.stream().map(j -> text(layout.runJobPrefix(j))).toList();
    for (String job : jobs) {
      assertThat(ledger.history(job, 100)).as("history of job %s", job)
          .extracting(RunRecord::run).containsExactlyInAnyOrderElementsOf(runs);
      for (String run : runs) {
        assertThat(ledger.completion(job, run)).get()
            .satisfies(r -> assertThat(r.job()).isEqualTo(job))
            .satisfies(r -> assertThat(r.run()).isEqualTo(run));
      }
    }
    List<String> written = new ArrayList<>();
    for (String job : jobs) {
      written.addAll(keysUnder(text(layout.runJobPrefix(job))));
    }
    assertThat(keysUnder(own + "/")).as("every key under the prefix is a run-ledger key")
        .allSatisfy(k -> assertThat(k).startsWith(own + "/once/"))
        .containsExactlyInAnyOrderElementsOf(written)
        .hasSize(jobs.size() * (1 + 2 * runs.size()));
    for (String key : written) {
      assertThat(jobPrefixes.stream().filter(key::startsWith))
          .as("job namespaces containing key %s", key).hasSize(1);
    }
    EtcdFence fence = new EtcdFence(admin, own, Duration.ofSeconds(10));
    for (String key : written.subList(0, 3)) {
      assertThatThrownBy(() -> fence.write(key, Long.MAX_VALUE, "overwrite"))
          .as("a fenced write onto the ledger's key %s", key)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("run-ledger");
    }
  }

  // ---------------------------------------------------------------- bounded calls

  @Test
  void everyCallIsBoundedWhenTheServerStallsAndBadInputFailsBeforeAnythingIsSent()
      throws Exception {
    int port = URI.create(EtcdServers.endpointList().get(0)).getPort();
    try (TcpProxy proxy = new TcpProxy(port)) {
      Duration bound = Duration.ofSeconds(1);
      EtcdRunLedger ledger = ledger("http://127.0.0.1:" + proxy.port(), bound);
      String job = "stall-" + random();
      HolderId holder = HolderId.generate();
      assertThatThrownBy(() -> ledger.begin(job + "\uD800", "r", 1, holder))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> ledger.completion(job, "r\uDC00"))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> ledger.begin(job, "r", 0, holder))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive");
      assertThatThrownBy(() -> ledger.history(job, 0)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> ledger.begin(job, "r".repeat(201), 1, holder))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(proxy.clientBytes().stream().mapToInt(b -> b.length).sum())
          .as("bytes sent to etcd for bad input").isZero();

      RunRecord attempt = ledger.begin(job, "r", 5, holder);
      proxy.stall();
      AtomicInteger ran = new AtomicInteger();
      Map<String, Supplier<Object>> calls = Map.of(
          "completion", () -> ledger.completion(job, "r"),
          "begin", () -> ledger.begin(job, "r2", 6, holder),
          "complete", () -> ledger.complete(attempt, none -> ran.incrementAndGet()),
          "fail", () -> ledger.fail(attempt, "x"),
          "history", () -> ledger.history(job, 10));
      for (Map.Entry<String, Supplier<Object>> c : calls.entrySet()) {
        long start = System.nanoTime();
        assertThatThrownBy(() -> c.getValue().get()).as("%s on a stalled server", c.getKey())
            .isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("did not answer").hasMessageContaining("outcome unknown");
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(took).as("%s waited about the 1 s call timeout, not for ever", c.getKey())
            .isLessThan(Duration.ofSeconds(20));
      }
      assertThat(ran).as("complete ran the work before its bounded write").hasValue(1);
      proxy.forward();
      await("the ledger answers again once the server does").atMost(WAIT)
          .ignoreException(LeaseStoreUnavailableException.class)
          .until(() -> ledger.history(job, 10).size() >= 1);
    }
  }

  // ---------------------------------------------------------------- out-of-band deletes

  @Test
  void anOutOfBandDeleteForgetsCompletionsAndAMissingFenceRefusesCompletion() throws Exception {
    EtcdRunLedger ledger = ledger(Duration.ofSeconds(10));
    KeyLayout layout = new KeyLayout(prefix);
    String job = "deleted-" + random();
    HolderId holder = HolderId.generate();
    RunRecord first = ledger.complete(ledger.begin(job, "r", 50, holder), none -> {});
    assertThat(first.status()).isEqualTo(RunRecord.Status.COMPLETED);

    admin.getKVClient().delete(layout.runJobPrefix(job), DeleteOption.builder().isPrefix(true)
        .build()).get(10, TimeUnit.SECONDS);
    assertThat(ledger.completion(job, "r")).as("completion after the job's keys were deleted")
        .isEmpty();
    assertThat(ledger.history(job, 10)).isEmpty();
    RunRecord again = ledger.begin(job, "r", 3, holder);
    assertThat(again.status()).as("the fence was forgotten too: a lower token begins")
        .isEqualTo(RunRecord.Status.STARTED);
    assertThat(again.attempt()).as("attempt ids are never reused").isGreaterThan(first.attempt());
    assertThat(ledger.complete(again, none -> {}).token()).as("the run completes a second time")
        .isEqualTo(3);

    RunRecord pending = ledger.begin(job, "r2", 60, holder);
    admin.getKVClient().delete(layout.runFenceKey(job)).get(10, TimeUnit.SECONDS);
    AtomicInteger ran = new AtomicInteger();
    assertThatThrownBy(() -> ledger.complete(pending, none -> ran.incrementAndGet()))
        .as("completing while the job's fence is gone").isInstanceOf(LeaseException.class)
        .isNotInstanceOf(FencedOutException.class).hasMessageContaining("fence")
        .hasMessageContaining("deleted out of band");
    assertThat(ran).hasValue(1);
    assertThat(ledger.completion(job, "r2")).isEmpty();
    assertThat(ledger.history(job, 1)).singleElement().extracting(RunRecord::status)
        .isEqualTo(RunRecord.Status.STARTED);
    RunRecord retry = ledger.begin(job, "r2", 61, holder);
    assertThat(ledger.complete(retry, none -> {}).status()).isEqualTo(RunRecord.Status.COMPLETED);
    assertThatThrownBy(() -> ledger.complete(pending, none -> {}))
        .as("the old attempt, now below the new fence").isInstanceOf(FencedOutException.class);

    RunRecord orphan = ledger.begin(job, "r3", 62, holder);
    admin.getKVClient().delete(layout.runAttemptKey(job, orphan.attempt()))
        .get(10, TimeUnit.SECONDS);
    assertThat(ledger.complete(orphan, none -> {}).status())
        .as("an attempt whose record was deleted, the fence intact, completes and is recorded")
        .isEqualTo(RunRecord.Status.COMPLETED);
    assertThat(ledger.history(job, 1)).singleElement().extracting(RunRecord::attempt)
        .isEqualTo(orphan.attempt());
  }

  // ---------------------------------------------------------------- configuration

  @Test
  void settingsAndStatesAreCheckedUpFront() {
    EtcdRunLedgerFactory factory = new EtcdRunLedgerFactory();
    assertThatThrownBy(() -> factory.open(Map.of("endpoints", EtcdServers.endpoints(),
        "keyprefix", "x"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[keyprefix]").hasMessageContaining("etcd run ledger");
    assertThatThrownBy(() -> factory.open(Map.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("endpoints");
    assertThatThrownBy(() -> factory.open(Map.of("endpoints", EtcdServers.endpoints(),
        "callTimeoutMs", "soon"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("callTimeoutMs");
    assertThatThrownBy(() -> factory.open(Map.of("endpoints", EtcdServers.endpoints(),
        "keyPrefix", "a//b"))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> EtcdRunLedger.builder("http://127.0.0.1:2379").tls(null).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("https://");
    assertThatThrownBy(() -> EtcdRunLedger.builder(admin).callTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);

    EtcdRunLedger ledger = factory.open(Map.of("endpoints", EtcdServers.endpoints(),
        "keyPrefix", prefix, "callTimeoutMs", "5000"));
    String job = "closed-" + random();
    RunRecord attempt = ledger.begin(job, "r", 1, HolderId.generate());
    RunRecord done = ledger.complete(attempt, none -> {});
    assertThatThrownBy(() -> ledger.complete(done, none -> {}))
        .as("completing a COMPLETED record").isInstanceOf(IllegalArgumentException.class);
    ledger.close();
    ledger.close();
    assertThatThrownBy(() -> ledger.completion(job, "r"))
        .isInstanceOf(LeaseStoreClosedException.class).hasMessageContaining("EtcdRunLedger");

    EtcdRunLedger onAdmin = EtcdRunLedger.builder(admin).keyPrefix(prefix).build();
    onAdmin.close();
    assertThat(EtcdRunLedger.builder(admin).keyPrefix(prefix).build().completion(job, "r"))
        .as("closing a ledger on your client leaves the client open").isPresent();
  }
}
