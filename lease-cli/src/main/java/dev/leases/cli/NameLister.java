package dev.leases.cli;

import java.util.List;

/**
 * The capability {@code leases list} needs and the SPI ({@link dev.leases.LeaseStore}) does not
 * offer: the names a store knows of. Implemented here for PostgreSQL only ({@link PostgresNames});
 * the other stores keep names encoded in keys and expose no way to enumerate them.
 */
interface NameLister {

  /**
   * Up to {@code limit} names that start with {@code prefix} (empty: every name), in code-point
   * order, including names that are free now but were once granted. A snapshot: names may appear or
   * change state right after it is read.
   */
  List<String> names(String prefix, int limit);
}
