/**
 * Micrometer metrics for leases: {@link dev.leases.micrometer.MeteredLeaseStore} times every store
 * call, {@link dev.leases.micrometer.LeaderMetrics} reports leadership, tokens and losses per lease,
 * {@link dev.leases.micrometer.FenceMetrics} and {@link dev.leases.micrometer.RunMetrics} count
 * fenced writes and exactly-once runs by outcome.
 */
@NullMarked
package dev.leases.micrometer;

import org.jspecify.annotations.NullMarked;
