package dev.leases.leader;

/**
 * Hears about leadership changes of one {@link LeaderLoop}.
 *
 * <p><b>Threading.</b> Callbacks never run on the renewal path: the loop queues each event and a
 * listener thread (the builder's {@code listenerExecutor}, by default a pool shared by all loops)
 * delivers them one at a time, in the order they happened, {@code lost(CLOSED)} after everything
 * before it. A callback that blocks delays only this loop's later callbacks, never a renewal or a
 * stand-down; one that runs longer than the renew interval is named in a WARN. A callback that
 * throws is logged and ignored. Start long work on your own executor and return.
 *
 * <p><b>The race, stated plainly:</b> by the time a callback runs, the state it reports may already
 * be out of date. {@link #acquired} does not mean "you are leader now"; it means "you became leader
 * with this token a moment ago" — check {@link LeaderLoop#currentToken()} when the work starts.
 * Work must carry the token to a fenced resource, which is the only place where "am I still the
 * leader?" gets a reliable answer. {@link #lost} may arrive well after the lease actually expired
 * (the process may have been paused, or an earlier callback was slow); the resource has fenced out
 * stale writes in the meantime.
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
