/**
 * {@link dev.leases.memory.InMemoryLeaseStore}: a correct store inside one JVM, for tests and for a
 * single process; the reference the kit's self-test breaks on purpose.
 */
@NullMarked
package dev.leases.memory;

import org.jspecify.annotations.NullMarked;
