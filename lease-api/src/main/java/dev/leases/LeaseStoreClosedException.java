package dev.leases;

/** A call on a store (or leader loop) after {@code close()}. */
public class LeaseStoreClosedException extends LeaseException {
  public LeaseStoreClosedException(String message) {
    super(message);
  }
}
