package dev.leases;

import org.jspecify.annotations.Nullable;

/** Base of the unchecked exceptions this library throws for store and fencing failures. */
public class LeaseException extends RuntimeException {
  /** An error with a message that says what to change. */
  public LeaseException(String message) {
    super(message);
  }

  /** An error caused by {@code cause}. */
  public LeaseException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
