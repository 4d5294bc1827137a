package dev.leases.spring;

import dev.leases.LeaseStore;

/**
 * Wraps the auto-configured {@link LeaseStore} (not one the application defines itself), e.g. to
 * meter it. Every bean of this type is applied, in {@code @Order}.
 */
@FunctionalInterface
public interface LeaseStoreDecorator {
  /** Returns the store to use in place of {@code store} (typically wrapping it). */
  LeaseStore decorate(LeaseStore store);
}
