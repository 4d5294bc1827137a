package dev.leases.leader;

/**
 * Hears about leadership changes of one {@link LeaderLoop}. Callbacks run on the loop's thread, one
 * at a time, in order; a callback that throws is logged and ignored. Keep them short: the loop does
 * not renew while a callback runs.
 *
 * <p><b>The race, stated plainly:</b> by the time a callback runs, the state it reports may already
 * be out of date. {@link #acquired} does not mean "you are leader now"; it means "you became leader
 * with this token a moment ago". Work must carry the token to a fenced resource, which is the only
 * place where "am I still the leader?" gets a reliable answer. {@link #lost} may arrive well after
 * the lease actually expired (the process may have been paused); the resource has fenced out stale
 * writes in the meantime.
 */
public interface LeaderListener {

  /** This loop was granted the lease with {@code token}. */
  default void acquired(String name, long token) {}

  /**
   * This loop stopped considering itself leader for {@code reason}. Work started under
   * {@code token} must stop; its writes will be rejected by the fence if someone else has taken
   * over.
   */
  default void lost(String name, long token, LossReason reason) {}

  /**
   * A renewal returned a different token than the tenure had: the lease expired in the store and
   * was re-granted to this loop. Anything still in flight under {@code oldToken} is fenced out.
   */
  default void tokenAdvanced(String name, long oldToken, long newToken) {}
}
