package dev.leases.once;

import dev.leases.HolderId;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link ExactlyOnce#run} did, when it returns normally. A run whose work threw ends in
 * {@link RunFailedException}; a run whose completion was refused because another runner took over
 * ends in {@link dev.leases.FencedOutException}.
 */
public sealed interface RunOutcome
    permits RunOutcome.Completed, RunOutcome.AlreadyCompleted, RunOutcome.RunningElsewhere {

  /** The job name. */
  String job();

  /** The run key. */
  String run();

  /** This call ran the work and its completion was recorded: {@code record} is it. */
  record Completed(RunRecord record) implements RunOutcome {
    /** Checks that the record is present. */
    public Completed {
      Objects.requireNonNull(record, "record");
    }

    /** The fencing token the completed attempt ran under. */
    public long token() {
      return record.token();
    }

    @Override
    public String job() {
      return record.job();
    }

    @Override
    public String run() {
      return record.run();
    }
  }

  /** The run had already completed (here or elsewhere); this call did not run the work. */
  record AlreadyCompleted(RunRecord record) implements RunOutcome {
    /** Checks that the record is present. */
    public AlreadyCompleted {
      Objects.requireNonNull(record, "record");
    }

    @Override
    public String job() {
      return record.job();
    }

    @Override
    public String run() {
      return record.run();
    }
  }

  /**
   * Another holder has the job's lease (running this run, or another run of the job); this call
   * did not run the work and did not wait. Fire again later: if that attempt fails or dies, the next
   * firing after its lease expires runs the work.
   *
   * @param holder who holds the lease, if the store said
   * @param expiresAt when its lease expires by the store's clock, if the store said
   */
  record RunningElsewhere(String job, String run, Optional<HolderId> holder,
      Optional<Instant> expiresAt) implements RunOutcome {
    /** Checks the parts. */
    public RunningElsewhere {
      Objects.requireNonNull(job, "job");
      Objects.requireNonNull(run, "run");
      Objects.requireNonNull(holder, "holder");
      Objects.requireNonNull(expiresAt, "expiresAt");
    }
  }
}
