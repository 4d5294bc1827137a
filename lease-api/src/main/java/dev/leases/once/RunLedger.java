package dev.leases.once;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Where run records live: the SPI behind {@link ExactlyOnce}. A ledger keeps, per job, a
 * <em>fence</em> (the highest fencing token that has begun an attempt) and, per attempt, a
 * {@link RunRecord}. Its one promise: at most one attempt of a (job, run) ever completes, and an
 * attempt whose token has been superseded cannot complete.
 *
 * <p>What the work's effect gets depends on the ledger:
 * <ul>
 *   <li><b>Transactional</b> ({@code T} is a transaction, e.g. a JDBC {@code Connection}): the work's
 *       writes through {@code T}, the fence check and the completion record commit together or not
 *       at all. A runner that dies or is paused at any point leaves none of its writes behind, and
 *       the effect happens exactly once.
 *   <li><b>Key-value</b> ({@code T} is {@code Void}, the record kept in the lease store by a fenced
 *       conditional write): the completion record is written at most once, and only under the
 *       current token; the work itself runs before that write and is not undone. A runner that dies
 *       mid-run leaves its effects and no record, and the next firing runs the work again; one whose
 *       completion is fenced out has run its work too. Such work must be idempotent (or fence its
 *       own writes with the token), and then the <em>effect</em> is exactly once.
 * </ul>
 *
 * <p>Every call is bounded in time except {@link #complete}, which runs the caller's work; its own
 * statements around the work are bounded. Failures of the ledger itself throw
 * {@link dev.leases.LeaseStoreUnavailableException} (outcome unknown). Implementations are
 * thread-safe.
 *
 * @param <T> the resource the work receives ({@code Void} when there is none)
 */
public interface RunLedger<T extends @Nullable Object> {

  /** The completion record of (job, run), empty if no attempt has completed. */
  Optional<RunRecord> completion(String job, String run);

  /**
   * Begins an attempt under {@code token}: raises the job's fence to {@code token}, then, reading
   * after the raise, returns the completion record if (job, run) has completed, and otherwise
   * records and returns a new {@link RunRecord.Status#STARTED} attempt. The raise and the record
   * commit together; once this returns, no attempt under a lower token can complete.
   *
   * @throws FencedOutException if the job's fence is already above {@code token} (a later holder
   *     began); nothing was recorded
   */
  RunRecord begin(String job, String run, long token, HolderId holder);

  /**
   * Runs {@code work} on the ledger's resource, then, in the same transaction where there is one,
   * checks that the job's fence is still {@code <= attempt.token()} and marks the attempt
   * {@link RunRecord.Status#COMPLETED}.
   *
   * <p>{@code work} throws only unchecked exceptions; the ledger rolls back what it can and
   * rethrows them unchanged, recording nothing (the caller records the failure with {@link #fail}).
   *
   * @param attempt a STARTED record returned by {@link #begin}
   * @return the completion record of (job, run): {@code attempt}'s if it completed; another
   *     attempt's if that one completed first (this attempt's transactional writes were rolled back)
   * @throws FencedOutException if a higher token has begun an attempt of the job; the attempt did
   *     not complete and its transactional writes were rolled back
   */
  RunRecord complete(RunRecord attempt, Consumer<T> work);

  /**
   * Marks a STARTED attempt {@link RunRecord.Status#FAILED} with {@code failure} (cut to
   * {@link RunRecord#MAX_FAILURE_LENGTH}). Not fenced: it changes only this attempt's record.
   *
   * @return the attempt's record as it now stands (unchanged if it had already finished)
   */
  RunRecord fail(RunRecord attempt, String failure);

  /** The job's attempts, newest first, at most {@code limit} of them. */
  List<RunRecord> history(String job, int limit);
}
