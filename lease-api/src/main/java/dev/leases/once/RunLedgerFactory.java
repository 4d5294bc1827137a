package dev.leases.once;

import java.util.Map;

/**
 * Opens a {@link RunLedger} from string settings, so that another process (a test's child JVM, the
 * benchmark's workers) can open one on the same records. Implementations have a public no-arg
 * constructor; a ledger that holds resources implements {@link AutoCloseable}.
 */
@FunctionalInterface
public interface RunLedgerFactory {

  /**
   * @throws IllegalArgumentException for a missing or bad setting, naming it
   */
  RunLedger<?> open(Map<String, String> settings);
}
