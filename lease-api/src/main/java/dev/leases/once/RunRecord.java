package dev.leases.once;

import dev.leases.HolderId;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One attempt at run {@code run} of job {@code job}, as a {@link RunLedger} keeps it. Times are the
 * ledger's (its store's clock where it has one).
 *
 * @param job the job
 * @param run the occurrence, e.g. {@code 2026-01-31} for a nightly job
 * @param attempt the ledger's id of this attempt: unique for the job, larger for later attempts
 * @param token the fencing token the attempt ran under
 * @param holder the lease holder that made the attempt
 * @param started when the attempt began
 * @param finished when it completed or failed; {@code null} while {@link Status#STARTED} (an attempt
 *     whose runner died stays STARTED for ever)
 * @param status what became of it
 * @param failure why it failed; {@code null} unless {@link Status#FAILED}
 */
public record RunRecord(String job, String run, long attempt, long token, HolderId holder,
    Instant started, @Nullable Instant finished, Status status, @Nullable String failure) {

  /** What became of an attempt. */
  public enum Status {
    /** Begun and not (yet) finished; also what a runner that died leaves behind. */
    STARTED,
    /** The work's effect and this record committed; no other attempt of the run can complete. */
    COMPLETED,
    /** The work threw, or its completion was fenced out; the run stays incomplete. */
    FAILED
  }

  /** Checks the parts. */
  public RunRecord {
    Objects.requireNonNull(job, "job");
    Objects.requireNonNull(run, "run");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(started, "started");
    Objects.requireNonNull(status, "status");
    if (token <= 0) {
      throw new IllegalArgumentException("a fencing token is positive, got " + token);
    }
    if ((finished == null) != (status == Status.STARTED)) {
      throw new IllegalArgumentException("finished must be null exactly while STARTED; status "
          + status + ", finished " + finished);
    }
    if ((failure == null) != (status != Status.FAILED)) {
      throw new IllegalArgumentException("failure must be set exactly when FAILED; status "
          + status + ", failure " + failure);
    }
  }

  /** Longest failure message a ledger keeps; longer ones are cut. */
  public static final int MAX_FAILURE_LENGTH = 2000;

  /** A one-line description of {@code failure} that fits a ledger: class, message, cut short. */
  public static String describe(Throwable failure) {
    return failureText(failure.getClass().getName()
        + (failure.getMessage() == null ? "" : ": " + failure.getMessage()));
  }

  /** {@code text} as a ledger keeps it: NUL (which PostgreSQL text refuses) as {@code ?}, cut short. */
  public static String failureText(String text) {
    String clean = text.replace('\0', '?');
    return clean.length() <= MAX_FAILURE_LENGTH ? clean
        : clean.substring(0, MAX_FAILURE_LENGTH - 3) + "...";
  }
}
