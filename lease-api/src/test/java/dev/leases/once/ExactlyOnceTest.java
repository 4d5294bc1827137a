package dev.leases.once;

import static dev.leases.testing.Conditions.waitUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.time.ManualClock;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link ExactlyOnce} over {@link InMemoryLeaseStore} and {@link InMemoryRunLedger}. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ExactlyOnceTest {

  private static final Duration TTL = Duration.ofMillis(300);

  private final ManualClock clock = new ManualClock();
  private final InMemoryLeaseStore store = new InMemoryLeaseStore(clock);
  private final InMemoryRunLedger ledger = new InMemoryRunLedger(clock);
  private final String job = "job-" + UUID.randomUUID();
  private final List<ExactlyOnce<?>> runners = new ArrayList<>();

  @AfterEach
  void closeRunners() {
    runners.forEach(ExactlyOnce::close);
  }

  private ExactlyOnce<Void> runner(LeaseStore s) {
    ExactlyOnce<Void> r = ExactlyOnce.builder(s, ledger).ttl(TTL).clock(clock).build();
    runners.add(r);
    return r;
  }

  @Test
  void secondFiringIsAlreadyCompletedAndDoesNotRunTheWork() {
    ExactlyOnce<Void> a = runner(store);
    ExactlyOnce<Void> b = runner(store.newClient());
    AtomicInteger effects = new AtomicInteger();

    RunOutcome first = a.run(job, "2026-01-31", (none, ctx) -> effects.incrementAndGet());
    RunOutcome second = b.run(job, "2026-01-31", (none, ctx) -> effects.incrementAndGet());
    RunOutcome again = a.run(job, "2026-01-31", (none, ctx) -> effects.incrementAndGet());

    assertThat(first).isInstanceOf(RunOutcome.Completed.class);
    RunRecord done = ((RunOutcome.Completed) first).record();
    assertThat(done.status()).isEqualTo(RunRecord.Status.COMPLETED);
    assertThat(done.holder()).isEqualTo(a.holder());
    assertThat(second).isEqualTo(new RunOutcome.AlreadyCompleted(done));
    assertThat(again).isEqualTo(new RunOutcome.AlreadyCompleted(done));
    assertThat(effects).hasValue(1);
    assertThat(store.inspect(RunKeys.leaseName(job)).status())
        .as("the lease is released after the run").isEqualTo(dev.leases.LeaseState.Status.FREE);
  }

  /**
   * A restored copy of a process (revoke on the way in) must not complete a run that its original
   * may be running under the same token, which no fence tells apart: the completion is refused,
   * nothing is recorded, the lease (the original's too) is not released, and later runs take a
   * fresh holder id. Before, the copy completed the run under the shared token.
   */
  @Test
  void aRunRevokedWhileItsWorkRunsNeitherCompletesNorRecordsNorReleases() {
    ExactlyOnce<Void> a = runner(store);
    HolderId before = a.holder();
    AtomicBoolean heldAfterRevoke = new AtomicBoolean(true);
    assertThatThrownBy(() -> a.run(job, "r", (none, ctx) -> {
      assertThat(dev.leases.leader.RestoreHooks.revokeAll()).as("revoked").isPositive();
      heldAfterRevoke.set(ctx.isHeld());
    })).isInstanceOf(FencedOutException.class).hasMessageContaining("revoked")
        .hasMessageContaining("nothing was recorded");
    assertThat(heldAfterRevoke).as("isHeld() after the revoke").isFalse();
    assertThat(ledger.completion(job, "r")).isEmpty();
    assertThat(ledger.history(job, 10)).extracting(RunRecord::status)
        .containsExactly(RunRecord.Status.STARTED);
    assertThat(store.inspect(RunKeys.leaseName(job))).as("the lease, not released")
        .isInstanceOfSatisfying(dev.leases.LeaseState.Held.class,
            h -> assertThat(h.holder()).isEqualTo(before));
    assertThat(a.holder()).isNotEqualTo(before);

    clock.advance(TTL.multipliedBy(2));
    RunOutcome later = a.run(job, "r", (none, ctx) -> {});
    assertThat(later).isInstanceOfSatisfying(RunOutcome.Completed.class,
        c -> assertThat(c.record().holder()).isEqualTo(a.holder()));
  }

  @Test
  void anotherRunKeyOfTheSameJobRunsAgain() {
    ExactlyOnce<Void> a = runner(store);
    assertThat(a.run(job, "2026-01-30", (n, c) -> {})).isInstanceOf(RunOutcome.Completed.class);
    assertThat(a.run(job, "2026-01-31", (n, c) -> {})).isInstanceOf(RunOutcome.Completed.class);
    assertThat(ledger.history(job, 10)).extracting(RunRecord::run)
        .containsExactly("2026-01-31", "2026-01-30");
  }

  @Test
  void concurrentFiringIsRunningElsewhereAndDoesNotWait() throws Exception {
    ExactlyOnce<Void> a = runner(store);
    ExactlyOnce<Void> b = runner(store.newClient());
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CompletableFuture<RunOutcome> first = CompletableFuture.supplyAsync(
        () -> a.run(job, "r1", (n, ctx) -> {
          inWork.countDown();
          finish.await();
        }));
    assertThat(inWork.await(10, TimeUnit.SECONDS)).isTrue();

    RunOutcome elsewhere = b.run(job, "r1", (n, ctx) -> {
      throw new AssertionError("must not run");
    });
    RunOutcome sameInstance = a.run(job, "r1", (n, ctx) -> {
      throw new AssertionError("must not run");
    });
    finish.countDown();

    assertThat(elsewhere).isInstanceOf(RunOutcome.RunningElsewhere.class);
    assertThat(((RunOutcome.RunningElsewhere) elsewhere).holder()).contains(a.holder());
    assertThat(((RunOutcome.RunningElsewhere) elsewhere).expiresAt()).isPresent();
    assertThat(sameInstance).isEqualTo(new RunOutcome.RunningElsewhere(job, "r1",
        Optional.of(a.holder()), Optional.empty()));
    assertThat(first.get(10, TimeUnit.SECONDS)).isInstanceOf(RunOutcome.Completed.class);
    assertThat(b.run(job, "r1", (n, c) -> {})).isInstanceOf(RunOutcome.AlreadyCompleted.class);
  }

  @Test
  void workThatThrowsIsRecordedFailedSurfacedAndRetriedByTheNextFiring() {
    ExactlyOnce<Void> a = runner(store);
    IOException boom = new IOException("disk full");

    assertThatThrownBy(() -> a.run(job, "r1", (n, ctx) -> {
      throw boom;
    })).isInstanceOf(RunFailedException.class).hasCause(boom)
        .hasMessageContaining("next firing retries it");
    assertThat(ledger.completion(job, "r1")).isEmpty();
    assertThat(store.inspect(RunKeys.leaseName(job)).status())
        .isEqualTo(dev.leases.LeaseState.Status.FREE);

    RunOutcome retry = runner(store.newClient()).run(job, "r1", (n, ctx) -> {});
    assertThat(retry).isInstanceOf(RunOutcome.Completed.class);

    List<RunRecord> history = ledger.history(job, 10);
    assertThat(history).extracting(RunRecord::status)
        .containsExactly(RunRecord.Status.COMPLETED, RunRecord.Status.FAILED);
    assertThat(history.get(1).failure()).isEqualTo("java.io.IOException: disk full");
    assertThat(history.get(0).token()).isGreaterThan(history.get(1).token());
    assertThat(history.get(0).attempt()).isGreaterThan(history.get(1).attempt());
  }

  @Test
  void aRunTenTimesItsTtlKeepsItsLeaseAndNoContenderGetsIt() throws Exception {
    InMemoryLeaseStore real = new InMemoryLeaseStore(); // the system clock: renewals must really land
    Duration ttl = Duration.ofSeconds(1); // renewals every 333 ms: slack for a loaded machine
    ExactlyOnce<Void> a = ExactlyOnce.builder(real, new InMemoryRunLedger()).ttl(ttl).build();
    runners.add(a);
    LeaseStore contender = real.newClient();
    HolderId other = HolderId.generate();
    AtomicInteger grantsToContender = new AtomicInteger();
    AtomicInteger attempts = new AtomicInteger();
    AtomicBoolean everNotHeld = new AtomicBoolean();
    AtomicBoolean stop = new AtomicBoolean();
    Thread rival = new Thread(() -> {
      while (!stop.get()) {
        attempts.incrementAndGet();
        if (contender.acquireOrRenew(RunKeys.leaseName(job), other, ttl).isPresent()) {
          grantsToContender.incrementAndGet();
        }
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          return;
        }
      }
    });
    long[] tokenSeen = new long[1];
    RunOutcome outcome;
    try {
      outcome = a.run(job, "long", (n, ctx) -> {
        tokenSeen[0] = ctx.token();
        rival.start(); // contends only once the run holds the lease
        long end = System.nanoTime() + ttl.multipliedBy(10).toNanos();
        while (System.nanoTime() - end < 0) {
          if (!ctx.isHeld()) {
            everNotHeld.set(true);
          }
          Thread.sleep(10);
        }
      });
    } finally {
      stop.set(true);
      rival.join();
    }
    assertThat(attempts.get()).as("the contender tried").isGreaterThan(20);
    assertThat(grantsToContender).as("grants to the contender during the run").hasValue(0);
    assertThat(everNotHeld).as("the context ever said the lease was not held").isFalse();
    assertThat(outcome).isInstanceOf(RunOutcome.Completed.class);
    assertThat(((RunOutcome.Completed) outcome).token()).isEqualTo(tokenSeen[0]);
  }

  @Test
  void aRunnerWhoseLeaseWasTakenOverCannotComplete() throws Exception {
    AtomicBoolean partitioned = new AtomicBoolean();
    LeaseStore aStore = new ForwardingLeaseStore(store.newClient()) {
      @Override
      public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
        if (partitioned.get()) {
          throw new LeaseStoreUnavailableException("partitioned (test)", null);
        }
        return super.acquireOrRenew(name, holder, ttl);
      }
    };
    ExactlyOnce<Void> a = runner(aStore);
    ExactlyOnce<Void> b = runner(store.newClient());
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    RunContext[] aContext = new RunContext[1];
    AtomicInteger effects = new AtomicInteger();
    CompletableFuture<RunOutcome> first = CompletableFuture.supplyAsync(
        () -> a.run(job, "r1", (n, ctx) -> {
          aContext[0] = ctx;
          inWork.countDown();
          finish.await();
          effects.incrementAndGet();
        }));
    assertThat(inWork.await(10, TimeUnit.SECONDS)).isTrue();
    partitioned.set(true);
    waitUntil("A's failed renewal marks its context as not holding", Duration.ofSeconds(10),
        () -> !aContext[0].isHeld());
    clock.advance(TTL.multipliedBy(2)); // A's lease expires by the store's clock

    RunOutcome second = b.run(job, "r1", (n, ctx) -> effects.incrementAndGet());
    assertThat(second).isInstanceOf(RunOutcome.Completed.class);
    finish.countDown();

    assertThatThrownBy(() -> first.join()).hasCauseInstanceOf(FencedOutException.class);
    FencedOutException fenced = (FencedOutException) catchCause(first);
    assertThat(fenced.presentedToken()).isEqualTo(aContext[0].token());
    assertThat(fenced.highestToken()).isEqualTo(((RunOutcome.Completed) second).token());
    List<RunRecord> history = ledger.history(job, 10);
    assertThat(history).extracting(RunRecord::holder).containsExactly(b.holder(), a.holder());
    assertThat(history).extracting(RunRecord::status)
        .containsExactly(RunRecord.Status.COMPLETED, RunRecord.Status.FAILED);
    assertThat(history.get(1).failure()).startsWith("fenced out");
    assertThat(ledger.completion(job, "r1")).contains(history.get(0));
  }

  private static Throwable catchCause(CompletableFuture<?> f) {
    try {
      f.join();
      throw new AssertionError("expected a failure");
    } catch (java.util.concurrent.CompletionException e) {
      return e.getCause();
    }
  }

  @Test
  void aPauseThatMovesTheWallClockPastTheDeadlineEndsTheHolding() throws Exception {
    ExactlyOnce<Void> a = runner(store);
    RunOutcome outcome = a.run(job, "r1", (n, ctx) -> {
      assertThat(ctx.isHeld()).isTrue();
      clock.suspend(TTL); // a VM suspension: wall time moves, monotonic does not
      assertThat(ctx.isHeld()).isFalse();
    });
    // nobody took over, so the fence still accepts the completion
    assertThat(outcome).isInstanceOf(RunOutcome.Completed.class);
  }

  @Test
  void historyListsEveryAttemptNewestFirst() {
    ExactlyOnce<Void> a = runner(store);
    for (int i = 0; i < 3; i++) {
      int n = i;
      assertThatThrownBy(() -> a.run(job, "r1", (none, ctx) -> {
        throw new IllegalStateException("attempt " + n);
      })).isInstanceOf(RunFailedException.class);
    }
    a.run(job, "r1", (none, ctx) -> {});
    a.run(job, "r1", (none, ctx) -> {}); // already completed: no attempt
    List<RunRecord> history = ledger.history(job, 10);
    assertThat(history).extracting(RunRecord::status).containsExactly(RunRecord.Status.COMPLETED,
        RunRecord.Status.FAILED, RunRecord.Status.FAILED, RunRecord.Status.FAILED);
    assertThat(history).extracting(RunRecord::failure).containsExactly(null,
        "java.lang.IllegalStateException: attempt 2", "java.lang.IllegalStateException: attempt 1",
        "java.lang.IllegalStateException: attempt 0");
    assertThat(ledger.history(job, 2)).hasSize(2);
  }

  @Test
  void aHangingStoreEndsTheHoldingWithinTheCallTimeout() throws Exception {
    AtomicBoolean hang = new AtomicBoolean();
    CountDownLatch never = new CountDownLatch(1);
    LeaseStore hanging = new ForwardingLeaseStore(store.newClient()) {
      @Override
      public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
        if (hang.get()) {
          try {
            never.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return super.acquireOrRenew(name, holder, ttl);
      }
    };
    ExactlyOnce<Void> a = runner(hanging);
    RunOutcome outcome = a.run(job, "r1", (n, ctx) -> {
      hang.set(true);
      waitUntil("a hung renewal ends the holding", Duration.ofSeconds(10), () -> !ctx.isHeld());
    });
    assertThat(outcome).isInstanceOf(RunOutcome.Completed.class);
  }

  /**
   * The work ends while a renewal is on its way: the release must not overtake it, or the renewal
   * re-acquires the freed job lease (a new tenure nobody renews or releases) and every other
   * runner of the job gets RunningElsewhere until it expires.
   */
  @Test
  void aRenewalInFlightWhenTheWorkEndsCannotReacquireTheReleasedLease() throws Exception {
    Duration ttl = Duration.ofSeconds(3);
    AtomicBoolean slow = new AtomicBoolean();
    CountDownLatch renewalSent = new CountDownLatch(1);
    CountDownLatch renewalDone = new CountDownLatch(1);
    LeaseStore slowRenewals = new ForwardingLeaseStore(store.newClient()) {
      @Override
      public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration t) {
        if (!slow.compareAndSet(true, false)) {
          return super.acquireOrRenew(name, holder, t);
        }
        renewalSent.countDown();
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
        while (System.nanoTime() < until) { // the request is on the wire: an interrupt cannot stop it
          Thread.onSpinWait();
        }
        try {
          return super.acquireOrRenew(name, holder, t);
        } finally {
          renewalDone.countDown();
        }
      }
    };
    ExactlyOnce<Void> a = ExactlyOnce.builder(slowRenewals, ledger).ttl(ttl).clock(clock).build();
    runners.add(a);
    RunOutcome outcome = a.run(job, "r1", (n, ctx) -> {
      slow.set(true);
      assertThat(renewalSent.await(10, TimeUnit.SECONDS)).as("a renewal is in flight").isTrue();
    });
    assertThat(outcome).isInstanceOf(RunOutcome.Completed.class);
    assertThat(renewalDone.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(store.inspect(RunKeys.leaseName(job)).status())
        .as("released after the run, not re-acquired by the renewal that was in flight")
        .isNotEqualTo(dev.leases.LeaseState.Status.HELD);
  }

  /**
   * One thread-safe runner, a dozen jobs at once, over a store that answers every call in 80 ms:
   * every run acquires and keeps its lease (a pool of 4 call threads refused the acquires with
   * "the store is not answering").
   */
  @Test
  void aDozenConcurrentRunsOverASlowishStoreKeepTheirLeases() throws Exception {
    LeaseStore slow = new ForwardingLeaseStore(store.newClient()) {
      @Override
      public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
        try {
          Thread.sleep(80); // a cross-zone round trip
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return super.acquireOrRenew(name, holder, ttl);
      }
    };
    AtomicInteger lostWhileRunning = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(12);
    ExactlyOnce<Void> once = ExactlyOnce.builder(slow, ledger).ttl(Duration.ofMillis(900))
        .clock(clock).build();
    runners.add(once);
    try {
      List<Future<RunOutcome>> runs = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        String j = job + "-" + i;
        runs.add(pool.submit(() -> once.run(j, "r", (n, ctx) -> {
          long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2000);
          while (System.nanoTime() < until) {
            if (!ctx.isHeld()) {
              lostWhileRunning.incrementAndGet();
              return;
            }
            Thread.sleep(10);
          }
        })));
      }
      for (Future<RunOutcome> r : runs) {
        assertThat(r.get(30, TimeUnit.SECONDS)).isInstanceOf(RunOutcome.Completed.class);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(lostWhileRunning).as("runs whose holding ended although the store answered every"
        + " call within 80 ms").hasValue(0);
  }

  @Test
  void badArgumentsAreRefusedWithMessagesThatSayWhatToChange() {
    ExactlyOnce<Void> a = runner(store);
    assertThatThrownBy(() -> a.run("j".repeat(RunKeys.MAX_JOB_LENGTH + 1), "r", (n, c) -> {}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("job name")
        .hasMessageContaining("limit is " + RunKeys.MAX_JOB_LENGTH);
    assertThatThrownBy(() -> a.run(job, "bad\nkey", (n, c) -> {}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("run key");
    assertThatThrownBy(() -> a.run(job, "half\uD800", (n, c) -> {}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unpaired surrogate");
    assertThatThrownBy(() -> ExactlyOnce.builder(store, ledger).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ttl is required");
    assertThatThrownBy(() -> ExactlyOnce.builder(store, ledger).ttl(TTL)
        .callTimeout(TTL).build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("callTimeout");
    String longest = "j".repeat(RunKeys.MAX_JOB_LENGTH);
    assertThat(a.run(longest, "r", (n, c) -> {})).isInstanceOf(RunOutcome.Completed.class);
  }
}
