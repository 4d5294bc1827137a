/**
 * Child JVMs for the kit's process scenarios: how a child opens a store
 * ({@link dev.leases.tck.process.StoreRecipe}) and a leader in another JVM that can be paused and
 * killed ({@link dev.leases.tck.process.LeaderProcess}).
 */
@NullMarked
package dev.leases.tck.process;

import org.jspecify.annotations.NullMarked;
