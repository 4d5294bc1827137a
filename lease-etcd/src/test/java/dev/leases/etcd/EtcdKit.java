package dev.leases.etcd;

import dev.leases.tck.LeaseStoreTck;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What every etcd subclass of the kit shares: out-of-band deletes and revocations through an
 * administrator's client, release hints on out-of-band deletes, one second of expiry slack (etcd
 * revokes expired leases in a loop that runs every 500 ms, then commits the revocation through
 * Raft, so a lease may refuse contenders for up to about half a second after its TTL; one second
 * leaves room for a busy machine).
 */
abstract class EtcdKit extends LeaseStoreTck {

  /** A client that may delete and revoke anything under {@link #prefix()}. */
  protected abstract Client admin() throws Exception;

  /** The key prefix of the kit's stores. */
  protected abstract String prefix();

  /** Deletes everything the store keeps for the name: the lease key and the companion key. */
  @Override
  protected void deleteOutOfBand(String name) throws Exception {
    KeyLayout keys = new KeyLayout(prefix());
    admin().getKVClient().delete(keys.leaseKey(name)).get(10, TimeUnit.SECONDS);
    admin().getKVClient().delete(keys.lastKey(name)).get(10, TimeUnit.SECONDS);
  }

  /**
   * Revokes, through the administrator's client, the etcd lease attached to {@code name}'s key: the
   * holder's shared etcd lease, and with it every name on it.
   */
  @Override
  protected boolean endSharedFate(String name) throws Exception {
    KeyValue kv = admin().getKVClient().get(new KeyLayout(prefix()).leaseKey(name))
        .get(10, TimeUnit.SECONDS).getKvs().get(0);
    admin().getLeaseClient().revoke(kv.getLease()).get(10, TimeUnit.SECONDS);
    return true;
  }

  /** A watch on the lease key sees the {@code DELETE} and the store fires the hint. */
  @Override
  protected boolean deliversHintsOnOutOfBandDelete() {
    return true;
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(1);
  }
}
