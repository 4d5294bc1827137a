package dev.leases.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method only while this process leads {@link #value()}, a leader loop
 * configured under {@code leases.leaders.<name>}; otherwise the call is skipped (it returns
 * {@code null}, or 0/false for primitives). While it runs, {@link LeaseContext#currentToken()} is
 * the token read when the call started.
 *
 * <p>The check is a snapshot: leadership may be lost while the method runs. Writes must carry the
 * token to a fenced resource ({@link SpringJdbcFence}), which rejects them once a successor has
 * written.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface OnlyWhileLeader {

  /** The lease, as configured under {@code leases.leaders}. */
  String value();
}
