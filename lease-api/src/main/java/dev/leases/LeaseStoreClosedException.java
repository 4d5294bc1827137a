package dev.leases;

/** A call on a store (or leader loop) after {@code close()}. */
public class LeaseStoreClosedException extends LeaseException {
  /** A call on a closed store or loop. */
  public LeaseStoreClosedException(String message) {
    super(message);
  }
}
