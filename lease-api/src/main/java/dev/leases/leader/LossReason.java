package dev.leases.leader;

/**
 * Why a {@link LeaderLoop}, or a {@link LeaseGroup} for one of its names, stopped considering itself
 * the holder.
 */
public enum LossReason {
  /** A renewal threw or timed out. The lease may still be ours in the store: unknown is no. */
  RENEWAL_FAILED,
  /** The store answered that another holder has the lease (or ours expired and was taken). */
  SUPERSEDED,
  /** No renewal landed before the local deadline (the promised expiry minus a safety margin). */
  LOCAL_DEADLINE,
  /**
   * Wall-clock and monotonic elapsed times disagreed: the process was suspended, restored from a
   * snapshot, or its clock was stepped. The loop also takes a fresh holder id, since a restored
   * snapshot may exist twice.
   */
  CLOCK_JUMP,
  /**
   * {@link LeaderLoop#revoke()} was called: the process was restored from a snapshot or checkpoint,
   * or a platform agent asked. The loop contends again under a fresh holder id.
   */
  REVOKED,
  /**
   * The loop or group was closed, or the name was {@linkplain LeaseGroup#remove removed} from its
   * group.
   */
  CLOSED
}
