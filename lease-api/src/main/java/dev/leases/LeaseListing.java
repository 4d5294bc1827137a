package dev.leases;

import dev.leases.spi.ForwardingLeaseStore;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * An optional capability of a {@link LeaseStore}: the lease names the store keeps a record of, for
 * operators' tools (the CLI's {@code list}) and dashboards. Not part of the safety path, and not
 * needed to hold a lease: stores that cannot enumerate names simply do not implement it. Every
 * store of this project does; {@code dev.leases.tck.LeaseListingTck} checks an implementation.
 *
 * <p><b>Contract.</b> {@link #names} returns up to {@code limit} distinct names that start with
 * {@code prefix} (taken literally: no character of it is a pattern), ascending by Unicode code
 * point (the order of their UTF-8 bytes, which is not {@link String#compareTo}'s UTF-16 order for
 * characters beyond U+FFFF), the smallest first, so that a cut by the limit is the start of the
 * whole answer. Every name held for the whole duration of the call is listed unless the limit cuts
 * it off; a name never granted is not. A name released, expired or deleted may be listed while the
 * store keeps a record of it (PostgreSQL's row, etcd's and Consul's last-tenure key) or not (Redis
 * keeps nothing of a released name); use {@link LeaseStore#inspect} for each name's state. The
 * answer is a snapshot, not a transaction: names may be granted, released or expire while it is
 * read. A call is bounded by the store's call timeout.
 */
public interface LeaseListing {

  /** The largest {@code limit} {@link #names} accepts. */
  int MAX_LIMIT = 10_000;

  /**
   * The order of {@link #names}: by Unicode code point, which is the order of the names' UTF-8
   * bytes (and PostgreSQL's {@code COLLATE "C"} on a UTF-8 database).
   */
  Comparator<String> CODE_POINT_ORDER = (a, b) -> {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Boolean.compare(i < a.length(), j < b.length());
  };

  /**
   * Up to {@code limit} names starting with {@code prefix}, in code-point order; see the class
   * comment for which names are listed.
   *
   * @param prefix literal prefix; empty lists every name. At most
   *     {@value LeaseArguments#MAX_NAME_LENGTH} characters, well-formed UTF-16, no control characters
   * @param limit 1 to {@value #MAX_LIMIT}
   * @throws IllegalArgumentException for a malformed prefix or a limit out of range
   * @throws LeaseStoreUnavailableException when the store does not answer within the call timeout
   * @throws LeaseStoreClosedException after {@link LeaseStore#close()}
   */
  List<String> names(String prefix, int limit);

  /**
   * The listing of {@code store}, or of the store underneath it when it is a decorator
   * ({@link ForwardingLeaseStore}, e.g. a metered store); empty when none in the chain lists names.
   */
  static Optional<LeaseListing> of(LeaseStore store) {
    LeaseStore s = java.util.Objects.requireNonNull(store, "store must not be null");
    while (true) {
      if (s instanceof LeaseListing listing) {
        return Optional.of(listing);
      }
      if (!(s instanceof ForwardingLeaseStore f)) {
        return Optional.empty();
      }
      s = f.delegate();
    }
  }

  /**
   * Checks the arguments of {@link #names} as every implementation must, with messages that say
   * what to change; returns the prefix.
   */
  static String requireListing(String prefix, int limit) {
    java.util.Objects.requireNonNull(prefix, "prefix must not be null (pass \"\" for every name)");
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be 1 to " + MAX_LIMIT + " names, got " + limit);
    }
    if (prefix.isEmpty()) {
      return prefix;
    }
    if (prefix.length() > LeaseArguments.MAX_NAME_LENGTH) {
      throw new IllegalArgumentException("prefix is " + prefix.length() + " characters long; no"
          + " name is longer than " + LeaseArguments.MAX_NAME_LENGTH);
    }
    return LeaseArguments.requireWellFormed("prefix",
        LeaseArguments.requireNoControlCharacters("prefix", prefix));
  }
}
