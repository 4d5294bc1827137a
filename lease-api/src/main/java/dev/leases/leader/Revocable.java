package dev.leases.leader;

/**
 * What {@link RestoreHooks} revokes after a restore: a {@link LeaderLoop}, a {@link LeaseGroup},
 * an {@link dev.leases.once.ExactlyOnce} runner, or a component of your own that holds leases.
 */
public interface Revocable {

  /** Stands down at once and contends again under a fresh holder id. */
  void revoke();
}
