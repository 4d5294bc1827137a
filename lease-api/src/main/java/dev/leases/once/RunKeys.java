package dev.leases.once;

import dev.leases.LeaseArguments;
import java.util.Objects;

/**
 * Validation of job names and run keys, shared by the runner and every ledger. Public so that
 * ledgers in other modules check exactly what the runner checks.
 */
public final class RunKeys {

  /** The prefix of the lease (and fence resource) name of a job: {@code once/<job>}. */
  public static final String LEASE_PREFIX = "once/";

  /** Longest job name: the lease name {@code once/<job>} must fit a lease name. */
  public static final int MAX_JOB_LENGTH = LeaseArguments.MAX_NAME_LENGTH - LEASE_PREFIX.length();

  /** Longest run key. */
  public static final int MAX_RUN_LENGTH = LeaseArguments.MAX_NAME_LENGTH;

  /** Largest history a ledger returns at once. */
  public static final int MAX_HISTORY = 10_000;

  private RunKeys() {}

  /**
   * Checks a job name and returns it.
   *
   * @throws IllegalArgumentException if it is blank, too long, or not well-formed text
   */
  public static String checkJob(String job) {
    return LeaseArguments.requireText("job name", job, MAX_JOB_LENGTH);
  }

  /**
   * Checks a job name and a run key.
   *
   * @throws IllegalArgumentException if either is blank, too long, or not well-formed text
   */
  public static void check(String job, String run) {
    checkJob(job);
    LeaseArguments.requireText("run key", run, MAX_RUN_LENGTH);
  }

  /** The lease of {@code job}, also the fence resource its ledger records: {@code once/<job>}. */
  public static String leaseName(String job) {
    return LEASE_PREFIX + checkJob(job);
  }

  /**
   * Checks that {@code attempt} is a STARTED record, as {@link RunLedger#complete} and
   * {@link RunLedger#fail} take, with valid job and run names.
   */
  public static RunRecord requireStarted(RunRecord attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    check(attempt.job(), attempt.run());
    if (attempt.status() != RunRecord.Status.STARTED) {
      throw new IllegalArgumentException("pass the STARTED record that begin() returned; got a "
          + attempt.status() + " one");
    }
    return attempt;
  }

  /**
   * Checks a history limit and returns it.
   *
   * @throws IllegalArgumentException unless it is 1 to {@value #MAX_HISTORY}
   */
  public static int checkLimit(int limit) {
    if (limit < 1 || limit > MAX_HISTORY) {
      throw new IllegalArgumentException("history limit must be between 1 and " + MAX_HISTORY
          + ", got " + limit);
    }
    return limit;
  }
}
