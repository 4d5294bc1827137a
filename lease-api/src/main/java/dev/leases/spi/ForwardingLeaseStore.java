package dev.leases.spi;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.TtlRange;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A {@link LeaseStore} that passes every call to another one: extend it and override what a
 * decorator changes (counting calls, injecting faults, dropping hints) without restating the rest.
 *
 * <p>The batch calls ({@link LeaseStore#acquireOrRenewAll}, {@link LeaseStore#releaseAll}) are
 * deliberately <em>not</em> forwarded: they keep the SPI's defaults, which go through this
 * decorator's single calls one name at a time, so a decorator that changes
 * {@link #acquireOrRenew} or {@link #release} changes batches too. A decorator that changes nothing
 * per name and wants the delegate's native batch overrides both to call {@link #delegate()}.
 * Optional capabilities such as {@link dev.leases.LeaseListing} are not forwarded either; find them
 * through the chain with {@link dev.leases.LeaseListing#of}.
 */
public abstract class ForwardingLeaseStore implements LeaseStore {

  private final LeaseStore delegate;

  /** Forwards every call to {@code delegate}, which this store closes when it is closed. */
  protected ForwardingLeaseStore(LeaseStore delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate must not be null");
  }

  /**
   * The store calls are passed to. Public so that optional capabilities of the store underneath a
   * chain of decorators stay reachable ({@link dev.leases.LeaseListing#of}).
   */
  public final LeaseStore delegate() {
    return delegate;
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    return delegate.acquireOrRenew(name, holder, ttl);
  }

  @Override
  public boolean release(String name, HolderId holder) {
    return delegate.release(name, holder);
  }

  @Override
  public OptionalLong token(String name) {
    return delegate.token(name);
  }

  @Override
  public LeaseState inspect(String name) {
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
    delegate.close();
  }
}
