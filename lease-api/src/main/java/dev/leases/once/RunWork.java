package dev.leases.once;

import org.jspecify.annotations.Nullable;

/**
 * The work of one run. It receives the ledger's transactional resource (a JDBC {@code Connection}
 * whose transaction also carries the completion record, or {@code null} for a ledger without one)
 * and the run's context.
 *
 * <p>Do not commit, roll back or change autocommit on the resource: the ledger does. Work done
 * outside that resource is <em>not</em> rolled back when the completion is refused, so make it
 * idempotent or fence it yourself with {@link RunContext#token()}.
 *
 * @param <T> the ledger's resource type
 */
@FunctionalInterface
public interface RunWork<T extends @Nullable Object> {
  /**
   * Does the run's work; an exception fails the attempt (the runner then throws
   * {@link RunFailedException} with it as the cause).
   */
  void run(T resource, RunContext context) throws Exception;
}
