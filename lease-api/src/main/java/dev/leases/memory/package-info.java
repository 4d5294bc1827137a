/**
 * {@link dev.leases.memory.InMemoryLeaseStore}: a correct store inside one JVM, for tests and for a
 * single process; the reference the kit's self-test breaks on purpose.
 */
package dev.leases.memory;
