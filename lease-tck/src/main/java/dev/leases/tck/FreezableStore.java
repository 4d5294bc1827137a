package dev.leases.tck;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;

/**
 * A store decorator whose calls block while frozen: the in-process stand-in for a holder whose
 * threads stopped running (a GC pause, a descheduled vCPU). Thawing lets the blocked calls proceed,
 * late, with everything they believed before.
 */
final class FreezableStore extends ForwardingLeaseStore {

  private volatile CountDownLatch gate;

  FreezableStore(LeaseStore delegate) {
    super(delegate);
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
    return super.acquireOrRenew(name, holder, ttl);
  }

  @Override
  public boolean release(String name, HolderId holder) {
    pass();
    return super.release(name, holder);
  }

  @Override
  public OptionalLong token(String name) {
    pass();
    return super.token(name);
  }

  @Override
  public LeaseState inspect(String name) {
    pass();
    return super.inspect(name);
  }

  @Override
  public void close() {
    thaw();
    super.close();
  }
}
