package dev.leases.tck;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.TtlRange;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;

/**
 * A store decorator whose calls block while frozen: the in-process stand-in for a holder whose
 * threads stopped running (a GC pause, a descheduled vCPU). Thawing lets the blocked calls proceed,
 * late, with everything they believed before.
 */
final class FreezableStore implements LeaseStore {

  private final LeaseStore delegate;
  private volatile CountDownLatch gate;

  FreezableStore(LeaseStore delegate) {
    this.delegate = delegate;
  }

  void freeze() {
    gate = new CountDownLatch(1);
  }

  void thaw() {
    CountDownLatch g = gate;
    gate = null;
    if (g != null) {
      g.countDown();
    }
  }

  private void pass() {
    CountDownLatch g = gate;
    if (g != null) {
      try {
        g.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while frozen", e);
      }
    }
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    pass();
    return delegate.acquireOrRenew(name, holder, ttl);
  }

  @Override
  public boolean release(String name, HolderId holder) {
    pass();
    return delegate.release(name, holder);
  }

  @Override
  public OptionalLong token(String name) {
    pass();
    return delegate.token(name);
  }

  @Override
  public LeaseState inspect(String name) {
    pass();
    return delegate.inspect(name);
  }

  @Override
  public TtlRange ttlRange() {
    return delegate.ttlRange();
  }

  @Override
  public Subscription onRelease(String name, Runnable listener) {
    return delegate.onRelease(name, listener);
  }

  @Override
  public void close() {
    thaw();
    delegate.close();
  }
}
