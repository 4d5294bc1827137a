package dev.leases.leader;

/** What {@link RestoreHooks} revokes after a restore: a leader loop or a lease group. */
interface Revocable {

  /** Stands down at once and contends again under a fresh holder id. */
  void revoke();
}
