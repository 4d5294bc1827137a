package dev.leases.once;

import dev.leases.HolderId;

/**
 * What a running {@link RunWork} may ask about its run. {@link #isHeld()} is a local judgement
 * that can only err towards "no": the ledger's fence, not this method, decides whether the work's
 * completion is accepted.
 */
public interface RunContext {

  /** The job name. */
  String job();

  /** The run key. */
  String run();

  /** The fencing token this attempt runs under; pass it to any other fenced resource you write. */
  long token();

  /** The holder this attempt runs as. */
  HolderId holder();

  /** The ledger's id of this attempt ({@link RunRecord#attempt()}). */
  long attempt();

  /**
   * Whether this runner still holds the job's lease by its local deadline (the last renewal's send
   * time plus the granted TTL minus a margin, on both the monotonic and the wall clock) and no
   * renewal has failed or been refused since. Once false it stays false: a long work may check it
   * and stop early, because its completion would most likely be fenced out.
   */
  boolean isHeld();
}
