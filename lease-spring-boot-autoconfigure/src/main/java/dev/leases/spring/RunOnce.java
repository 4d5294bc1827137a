package dev.leases.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method through {@link dev.leases.once.ExactlyOnce}: "job {@link #job()},
 * run R" completes once however many processes fire it. Meant for {@code @Scheduled} methods that
 * every instance of an application fires.
 *
 * <pre>{@code
 * @Scheduled(cron = "0 0 2 * * *")
 * @RunOnce(job = "nightly-invoices", runKey = "yyyy-MM-dd")
 * @Transactional
 * public void invoices() {
 *   jdbc.update("INSERT INTO invoices ...", LeaseContext.currentToken());
 * }
 * }</pre>
 *
 * <p>The run key R is, in this order: the SpEL expression {@link #run()} (variables
 * {@code #fireTime}, an {@link java.time.Instant}, and the method's arguments {@code #p0}, ... or
 * by name); else the schedule's fire time formatted with {@link #runKey()}; else the fire time
 * itself as an ISO-8601 instant. The fire time is read from the method's {@code @Scheduled}: the
 * latest cron time at or before now, or now truncated to the {@code fixedRate}/{@code fixedDelay}
 * period (counted from the epoch, so every process computes the same key for the same period —
 * "once per period", whoever fires first in it).
 *
 * <p>What the call does: {@code AlreadyCompleted} and {@code RunningElsewhere} skip the method
 * (it returns {@code null}, or 0/false for primitives); otherwise the method runs with
 * {@link LeaseContext} bound to its run, inside a Spring transaction that also carries the fence
 * check and the completion record (on the JDBC ledger: a {@code @Transactional} on the same method
 * joins it; JdbcTemplate and JPA writes commit or roll back with the completion). An exception
 * thrown by the method is rethrown as it was, and the run stays incomplete for the next firing. A
 * completion refused because another runner took over throws
 * {@link dev.leases.FencedOutException}; everything rolled back.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RunOnce {

  /** The job's name; also its lease, {@code once/<job>}. {@code ${...}} placeholders resolve. */
  String job();

  /** A SpEL expression for the run key; empty to derive it from the schedule's fire time. */
  String run() default "";

  /**
   * A {@link java.time.format.DateTimeFormatter} pattern applied to the fire time, e.g.
   * {@code yyyy-MM-dd} for "once per day"; empty for the ISO-8601 instant.
   */
  String runKey() default "";

  /** Time zone of {@link #runKey()}; default the {@code @Scheduled} zone, else the system's. */
  String zone() default "";

  /**
   * The job lease's TTL as a duration ({@code 30s}, {@code PT1M}); default
   * {@code leases.once.ttl}, else {@code leases.default-ttl}.
   */
  String ttl() default "";
}
