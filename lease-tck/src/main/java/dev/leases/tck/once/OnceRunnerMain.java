package dev.leases.tck.once;

import dev.leases.FencedOutException;
import dev.leases.LeaseStore;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunFailedException;
import dev.leases.once.RunLedger;
import dev.leases.once.RunOutcome;
import dev.leases.tck.process.ChildArgs;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A separate JVM that fires exactly-once runs when its parent says so, for {@link RunLedgerTck}.
 * Arguments ({@link ChildArgs}): the store recipe, a {@link LedgerRecipe} as options, and
 * {@code --job=J --ttl-ms=N --work-ms=N}. It prints {@code READY holder}, then for each
 * {@code FIRE run}: {@code WORKING run token} when the work starts and {@code OUTCOME run KIND ...}
 * at the end, KIND one of COMPLETED ({@code token held-throughout}), ALREADY_COMPLETED,
 * RUNNING_ELSEWHERE, FENCED ({@code presented highest}), FAILED, ERROR. The work lasts
 * {@code work-ms} and watches that its lease stays held; with {@code --effect=CLASS} it first applies
 * that {@link OnceEffect} through the ledger's resource.
 */
public final class OnceRunnerMain {

  private OnceRunnerMain() {}

  /**
   * Repeats {@code calls} until they succeed once, for up to a minute; then rethrows the last
   * failure.
   */
  private static void warmUp(Runnable calls) throws InterruptedException {
    long end = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        calls.run();
        return;
      } catch (RuntimeException e) {
        if (System.nanoTime() > end) {
          throw e;
        }
        Thread.sleep(200);
      }
    }
  }

  /** Runs as a child JVM started by the kit; the arguments are {@link dev.leases.tck.process.ChildArgs}. */
  public static void main(String[] args) throws Exception {
    ChildArgs parsed = ChildArgs.parse(args);
    String job = parsed.require("job");
    Duration ttl = Duration.ofMillis(parsed.requireLong("ttl-ms"));
    long workMs = parsed.requireLong("work-ms");
    String effectClass = parsed.options().get("effect");
    OnceEffect effect = effectClass == null ? (resource, ctx) -> {} : OnceEffect.named(effectClass);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    RunLedger<?> ledger = LedgerRecipe.fromOptions(parsed.options()).open();
    try (LeaseStore store = parsed.recipe().open();
        ExactlyOnce<?> once = ExactlyOnce.builder(store, ledger).ttl(ttl).build()) {
      // A cold JVM's first calls (class loading, connection set-up, ten JVMs starting at once on
      // a loaded machine) may overrun a call timeout: not what is tested. The reads and a write of
      // a lease of its own (the write path's classes: etcd's first acquire of a JVM ran over the
      // runner's ttl/3 in both JVMs at once) come first.
      dev.leases.HolderId warmHolder = dev.leases.HolderId.generate();
      String warmLease = "kit-warm-up/" + warmHolder.value(); // short, whatever the job's length
      warmUp(() -> {
        store.inspect(dev.leases.once.RunKeys.leaseName(job));
        ledger.history(job, 1);
        store.acquireOrRenew(warmLease, warmHolder, ttl);
        store.release(warmLease, warmHolder);
      });
      out.println("READY " + once.holder());
      BufferedReader in = new BufferedReader(
          new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null) {
        if (!line.startsWith("FIRE ")) {
          out.println("ERROR unknown command " + line);
          continue;
        }
        String run = line.substring(5).trim();
        out.println("OUTCOME " + run + " " + fire(once, job, run, workMs, effect, out));
      }
    } finally {
      if (ledger instanceof AutoCloseable c) {
        c.close();
      }
    }
  }

  private static <T> String fire(ExactlyOnce<T> once, String job, String run, long workMs,
      OnceEffect effect, PrintStream out) {
    boolean[] heldThroughout = {true};
    try {
      RunOutcome outcome = once.run(job, run, (resource, ctx) -> {
        effect.apply(resource, ctx);
        out.println("WORKING " + run + " " + ctx.token());
        long end = System.nanoTime() + workMs * 1_000_000L;
        while (System.nanoTime() - end < 0) {
          heldThroughout[0] &= ctx.isHeld();
          Thread.sleep(20);
        }
        heldThroughout[0] &= ctx.isHeld();
      });
      return describe(outcome, heldThroughout[0]);
    } catch (FencedOutException e) {
      return "FENCED " + e.presentedToken() + " " + e.highestToken();
    } catch (RunFailedException e) {
      return "FAILED " + e.getCause();
    } catch (RuntimeException e) {
      return "ERROR " + e.toString().replace('\n', ' ');
    }
  }

  /** The OUTCOME line's text for {@code outcome}. */
  static String describe(RunOutcome outcome, boolean heldThroughout) {
    if (outcome instanceof RunOutcome.Completed done) {
      return "COMPLETED " + done.token() + " " + heldThroughout;
    }
    if (outcome instanceof RunOutcome.AlreadyCompleted done) {
      return "ALREADY_COMPLETED " + done.record().holder();
    }
    RunOutcome.RunningElsewhere elsewhere = (RunOutcome.RunningElsewhere) outcome;
    return "RUNNING_ELSEWHERE " + elsewhere.holder().map(Object::toString).orElse("?");
  }
}
