/**
 * Building blocks for store authors: bounded calls ({@link dev.leases.spi.BoundedCalls}), deadlines
 * on both clocks ({@link dev.leases.spi.LocalDeadline}), rate-limited warnings
 * ({@link dev.leases.spi.FailureLog}), injective key text ({@link dev.leases.spi.KeyText}), release
 * listeners, a forwarding store, and secrets that settings point to
 * ({@link dev.leases.spi.SecretSetting}). Used by every backend, so that each rule lives in one place.
 */
@NullMarked
package dev.leases.spi;

import org.jspecify.annotations.NullMarked;
