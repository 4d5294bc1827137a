package dev.leases;

import org.jspecify.annotations.Nullable;

/**
 * The store did not answer in time or answered with an error. The outcome of the call is
 * <em>unknown</em>: a renewal that throws this may or may not have landed, and a caller must act as
 * though it did not (the leader loop stands down).
 */
public class LeaseStoreUnavailableException extends LeaseException {
  /** A call whose outcome is unknown, with what failed. */
  public LeaseStoreUnavailableException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
