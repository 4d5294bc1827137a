/**
 * Spring integration: {@link dev.leases.spring.OnlyWhileLeader} and {@link dev.leases.spring.RunOnce}
 * on bean methods, leader events ({@link dev.leases.spring.LeaderEvent}), fenced JDBC writes and a
 * run ledger in Spring-managed transactions, and the customizer and decorator hooks the
 * auto-configuration applies.
 */
@NullMarked
package dev.leases.spring;

import org.jspecify.annotations.NullMarked;
