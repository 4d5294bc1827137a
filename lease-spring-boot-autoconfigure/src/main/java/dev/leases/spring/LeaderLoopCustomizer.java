package dev.leases.spring;

import dev.leases.leader.LeaderLoop;

/**
 * Adjusts the builder of each configured leader loop before it is built (add listeners, a
 * scheduler, a clock). Every bean of this type is applied, in {@code @Order}.
 */
@FunctionalInterface
public interface LeaderLoopCustomizer {
  /** Adjusts the builder of the loop for {@code lease} before it is built. */
  void customize(String lease, LeaderLoop.Builder builder);

  /** Called once the loop is built, before it starts (e.g. to watch it). */
  default void built(String lease, LeaderLoop loop) {}
}
