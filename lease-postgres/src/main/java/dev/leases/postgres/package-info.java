/**
 * PostgreSQL backend: {@link dev.leases.postgres.PostgresLeaseStore} (leases as rows judged by the
 * server's {@code clock_timestamp()}, tokens from a sequence, release hints by LISTEN/NOTIFY),
 * {@link dev.leases.postgres.PostgresLeaseStoreFactory} (a store with its own pool, from plain
 * settings), and {@link dev.leases.postgres.JdbcFence} (fenced writes to JDBC resources, optionally
 * in the same transaction as the grant).
 */
@NullMarked
package dev.leases.postgres;

import org.jspecify.annotations.NullMarked;
