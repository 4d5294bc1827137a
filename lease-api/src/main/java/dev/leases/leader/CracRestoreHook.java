package dev.leases.leader;

import org.crac.Context;
import org.crac.Core;
import org.crac.Resource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code org.crac} resource that revokes every loop after a restore. Only {@link RestoreHooks}
 * touches this class, and only after it found {@code org.crac} on the class path: nothing else may
 * name a CRaC type, or loading it fails where the optional dependency is absent.
 */
final class CracRestoreHook implements Resource {

  private static final Logger log = LoggerFactory.getLogger(RestoreHooks.class);

  /** Held strongly: the CRaC context may keep only a weak reference. */
  static final CracRestoreHook INSTANCE = new CracRestoreHook();

  private CracRestoreHook() {}

  static void registerOnce() {
    Core.getGlobalContext().register(INSTANCE);
  }

  @Override
  public void beforeCheckpoint(Context<? extends Resource> context) {}

  @Override
  public void afterRestore(Context<? extends Resource> context) {
    int n = RestoreHooks.revokeAll();
    log.warn("restored from a checkpoint: revoked {} leader loop(s); they contend again under"
        + " fresh holder ids", n);
  }
}
