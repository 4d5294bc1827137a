package dev.leases.cli;

import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code leases watch NAME}: prints the lease's state, then each change of status, holder or token,
 * until Ctrl-C (or {@code --count} states). It polls at least every {@code --interval} and, while the
 * lease is held, again when the store says it expires; the store's release hints
 * ({@link LeaseStore#onRelease}) wake it early. Hints can be lost and polling has gaps, so a tenure
 * shorter than the interval may be missed: watch shows states, not a history.
 *
 * <p>If the first read fails, the command exits 3. Later failures print one {@code UNAVAILABLE}
 * line and the watch goes on.
 */
@Command(name = "watch", description = {
    "Print the lease's state, then every change (status, holder, token) until Ctrl-C. Polls at",
    "least every --interval and at the expiry the store reported; release hints wake it early.",
    "Tenures shorter than the interval may be missed."})
final class WatchCommand extends NamedCommand {

  @Option(names = "--interval", paramLabel = "MILLIS", defaultValue = "1000",
      description = "Poll at least this often, in ms (100 to 60000, default ${DEFAULT-VALUE}).")
  long intervalMillis;

  @Option(names = "--count", paramLabel = "N", defaultValue = "0",
      description = "Exit 0 after printing N states (default 0: until interrupted).")
  int count;

  @Override
  int run(StoreOptions.Opened opened, Output output) {
    String n = name();
    if (intervalMillis < 100 || intervalMillis > 60_000) {
      throw new CliException(ExitCodes.USAGE,
          "--interval must be 100 to 60000 ms, got " + intervalMillis);
    }
    if (count < 0) {
      throw new CliException(ExitCodes.USAGE, "--count must be 0 or more, got " + count);
    }
    LeaseStore store = opened.store();
    LeaseState first = store.inspect(n); // fails fast (exit 3) when the store is unreachable
    Semaphore wake = new Semaphore(0);
    try (LeaseStore.Subscription ignored = subscribe(store, n, wake)) {
      int printed = 0;
      Object last = null;
      LeaseState state = first;
      while (true) {
        Object seen = state == null ? "unavailable" : identity(state);
        if (!seen.equals(last)) {
          if (state == null) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("name", n);
            f.put("status", "UNAVAILABLE");
            output.print(f, n + "  UNAVAILABLE  (the store did not answer; still trying)");
          } else {
            output.state(state);
          }
          last = seen;
          if (count > 0 && ++printed >= count) {
            return ExitCodes.OK;
          }
        }
        long waitMillis = intervalMillis;
        if (state instanceof LeaseState.Held h) {
          waitMillis = Math.max(1, Math.min(waitMillis, h.remaining().toMillis() + 1));
        }
        try {
          wake.tryAcquire(waitMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return ExitCodes.OK;
        }
        wake.drainPermits();
        try {
          state = store.inspect(n);
        } catch (LeaseStoreUnavailableException e) {
          state = null;
        }
      }
    }
  }

  /** What counts as a change: status, holder and token (a renewal moves only the expiry). */
  private static Object identity(LeaseState s) {
    String holder = s instanceof LeaseState.Held h ? h.holder().value()
        : s instanceof LeaseState.Expired e ? e.holder().value() : null;
    return s.status() + "/" + holder + "/" + s.lastToken();
  }

  private static LeaseStore.Subscription subscribe(LeaseStore store, String name, Semaphore wake) {
    try {
      return store.onRelease(name, wake::release);
    } catch (LeaseStoreUnavailableException e) {
      return () -> {}; // hints are only hints: polling still sees every state it can
    }
  }
}
