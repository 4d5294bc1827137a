package dev.leases.leader;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/** Stores that fail the way broken clients and unreachable servers do, for loop and group tests. */
final class BrokenStores {

  private BrokenStores() {}

  /** Throws {@code error} from the next acquireOrRenew once armed, as a broken client can. */
  static final class ThrowingOnce extends ForwardingLeaseStore {
    final AtomicBoolean armed = new AtomicBoolean();
    final Error error;

    ThrowingOnce(LeaseStore delegate, Error error) {
      super(delegate);
      this.error = error;
    }

    @Override
    public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
      if (armed.compareAndSet(true, false)) {
        throw error;
      }
      return super.acquireOrRenew(name, holder, ttl);
    }
  }

  /** Refuses the first release-hint subscription, as a store that cannot reach its server does. */
  static final class HintsDownOnce extends ForwardingLeaseStore {
    final AtomicBoolean refused = new AtomicBoolean();

    HintsDownOnce(LeaseStore delegate) {
      super(delegate);
    }

    @Override
    public Subscription onRelease(String name, Runnable listener) {
      if (refused.compareAndSet(false, true)) {
        throw new LeaseStoreUnavailableException("release hints: connection refused", null);
      }
      return super.onRelease(name, listener);
    }
  }
}
