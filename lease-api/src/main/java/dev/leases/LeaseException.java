package dev.leases;

/** Base of the unchecked exceptions this library throws for store and fencing failures. */
public class LeaseException extends RuntimeException {
  public LeaseException(String message) {
    super(message);
  }

  public LeaseException(String message, Throwable cause) {
    super(message, cause);
  }
}
