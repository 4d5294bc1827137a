package dev.leases.leader;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * "Revoke on the way in" for processes restored from a snapshot or checkpoint: every started
 * {@link LeaderLoop} and {@link LeaseGroup} and every open {@link dev.leases.once.ExactlyOnce}
 * runner of the process is {@linkplain LeaderLoop#revoke() revoked} after a restore, so
 * a restored copy contends under a fresh holder id instead of writing under the token its image
 * carried.
 *
 * <p>When {@code org.crac} (the CRaC API, which AWS Lambda SnapStart also drives) is on the class
 * path, loops register here by themselves and a restore revokes them. Without it, a platform agent
 * or the application calls {@link #revokeAll()} when it knows the process was restored, cloned or
 * resumed from a VM snapshot. The loop's wall-versus-monotonic clock check cannot catch the case
 * where both clocks were frozen with the process; this is the remedy for it. The fence still
 * rejects what slips through.
 */
public final class RestoreHooks {

  private static final Logger log = LoggerFactory.getLogger(RestoreHooks.class);
  private static final Set<Revocable> LOOPS = Collections.newSetFromMap(new WeakHashMap<>());
  private static final boolean CRAC = detectCrac();

  private RestoreHooks() {}

  /** Revokes every started, unclosed loop, group and runner of this process; returns how many. */
  public static int revokeAll() {
    List<Revocable> loops;
    synchronized (LOOPS) {
      loops = new ArrayList<>(LOOPS);
    }
    for (Revocable loop : loops) {
      loop.revoke();
    }
    return loops.size();
  }

  /** Whether a restore through {@code org.crac} revokes the loops by itself. */
  public static boolean checkpointRestoreHooked() {
    return CRAC;
  }

  /**
   * Has {@link #revokeAll()} (and a restore through {@code org.crac}) revoke {@code loop} until
   * {@link #unregister}; held weakly, so an instance that is never closed can still be collected.
   * Loops, groups and exactly-once runners register themselves.
   */
  public static void register(Revocable loop) {
    synchronized (LOOPS) {
      LOOPS.add(loop);
    }
  }

  /** Undoes {@link #register}; idempotent. */
  public static void unregister(Revocable loop) {
    synchronized (LOOPS) {
      LOOPS.remove(loop);
    }
  }

  private static boolean detectCrac() {
    try {
      Class.forName("org.crac.Core", false, RestoreHooks.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
    try {
      CracRestoreHook.registerOnce();
      return true;
    } catch (RuntimeException | LinkageError e) {
      log.warn("org.crac is on the class path but its global context refused the leases restore"
          + " hook; call RestoreHooks.revokeAll() after a restore: {}", e.toString());
      return false;
    }
  }
}
