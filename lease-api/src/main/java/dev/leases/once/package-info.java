/**
 * Exactly-once runs: "job J, run R" completes once however many processes fire it.
 * {@link dev.leases.once.ExactlyOnce} is the runner; {@link dev.leases.once.RunLedger} is where
 * completions are recorded under the job lease's fencing token
 * ({@link dev.leases.once.InMemoryRunLedger} here, {@code JdbcRunLedger} in {@code lease-postgres}).
 */
@NullMarked
package dev.leases.once;

import org.jspecify.annotations.NullMarked;
