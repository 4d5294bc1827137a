package dev.leases.postgres;

import dev.leases.LeaseException;

/**
 * The server refused a call because the connection's role lacks a privilege (SQLState 42501,
 * insufficient_privilege). Not an outage, and not a lease held by another: retrying does not help
 * until an administrator grants what the message names (see
 * {@link PostgresLeaseStore#grantsSql}, {@link PostgresLeaseStore#observerGrantsSql},
 * {@link JdbcFence#grantsSql} and {@link JdbcRunLedger#grantsSql}). The refused statement changed
 * nothing.
 */
public class PostgresPermissionException extends LeaseException {
  PostgresPermissionException(String message, Throwable cause) {
    super(message, cause);
  }
}
