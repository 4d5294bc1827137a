/**
 * The two clocks a holder needs, wall and monotonic, behind {@link dev.leases.time.LeaseClock} so
 * that tests can pause, suspend and step them ({@link dev.leases.time.ManualClock}).
 */
@NullMarked
package dev.leases.time;

import org.jspecify.annotations.NullMarked;
