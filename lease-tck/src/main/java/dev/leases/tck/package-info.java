/**
 * The compatibility test kit: extend {@link dev.leases.tck.LeaseStoreTck} in your backend's tests
 * to prove the SPI's contract (tokens, expiry by the store's clock, paused and killed leaders in
 * separate JVMs, bounded calls, batches); {@link dev.leases.tck.ReferenceFencedResource} is the
 * fenced resource the scenarios write to. The kit needs a Unix {@code kill} (SIGSTOP, SIGKILL).
 */
@NullMarked
package dev.leases.tck;

import org.jspecify.annotations.NullMarked;
