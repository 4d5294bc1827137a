/**
 * Holding leases over any {@link dev.leases.LeaseStore}: {@link dev.leases.leader.LeaderLoop} for one
 * name, {@link dev.leases.leader.LeaseGroup} for a changing set of names, both on a few shared
 * threads, with listeners kept off the renewal path, stand-down on clock jumps, and
 * {@link dev.leases.leader.RestoreHooks} for "revoke on the way in" after a snapshot restore.
 */
@NullMarked
package dev.leases.leader;

import org.jspecify.annotations.NullMarked;
