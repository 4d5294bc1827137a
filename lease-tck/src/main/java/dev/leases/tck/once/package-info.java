/**
 * The kit for exactly-once run ledgers: extend {@link dev.leases.tck.once.RunLedgerTck}; runners in
 * separate JVMs are opened from a {@link dev.leases.tck.once.LedgerRecipe}.
 */
@NullMarked
package dev.leases.tck.once;

import org.jspecify.annotations.NullMarked;
