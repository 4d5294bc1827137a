/**
 * The lease SPI: {@link dev.leases.LeaseStore} (named leases that expire by the store's clock and
 * carry a fencing token that grows on every change of holder), its values
 * ({@link dev.leases.LeaseGrant}, {@link dev.leases.LeaseState}, {@link dev.leases.AcquireResult},
 * {@link dev.leases.HolderId}, {@link dev.leases.TtlRange}), the exceptions a call can throw, and
 * {@link dev.leases.LeaseStoreFactory} for stores opened from plain settings.
 */
@NullMarked
package dev.leases;

import org.jspecify.annotations.NullMarked;
