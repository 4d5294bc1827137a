package dev.leases.once;

/**
 * The work of a run threw. The attempt was recorded as {@link RunRecord.Status#FAILED}, the lease
 * was released, and the run stays incomplete: the next firing runs it again. The work's exception,
 * checked or not, is the {@linkplain #getCause() cause}.
 */
public class RunFailedException extends RuntimeException {

  private final String job;
  private final String run;
  private final long token;

  /** The work of run {@code run} failed with {@code cause}; the run is recorded as failed. */
  public RunFailedException(String job, String run, long token, Throwable cause) {
    super("run '" + run + "' of job '" + job + "' (token " + token + ") failed and was not"
        + " completed; the next firing retries it: " + cause, cause);
    this.job = job;
    this.run = run;
    this.token = token;
  }

  /** The job name. */
  public String job() {
    return job;
  }

  /** The run key. */
  public String run() {
    return run;
  }

  /** The fencing token the failed attempt ran under. */
  public long token() {
    return token;
  }
}
