package dev.leases.postgres;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseListing;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases as rows of a PostgreSQL table, judged by the server's {@code clock_timestamp()}.
 *
 * <pre>{@code
 * LeaseStore store = PostgresLeaseStore.builder(hikariDataSource).table("leases").build();
 * }</pre>
 *
 * <h2>Storage</h2>
 * One row per lease name: {@code name text primary key, holder text null, token bigint,
 * expires_at timestamptz} ({@link #schemaSql(String)}), and a sequence {@code <table>_token_seq}
 * that issues every token. The first acquire-or-renew of a name (by this store) is one round trip
 * of two statements: {@code INSERT ... ON CONFLICT DO NOTHING} puts a placeholder row in place if
 * there is none (free, {@code expires_at = '-infinity'}, read as no row), then
 * {@code UPDATE ... WHERE} (holder is us, or free, or expired) grants it: no row back means another
 * holder has an unexpired lease. Once the store has seen the row, a call is one statement: that
 * {@code UPDATE}, and a check that the row exists (should it have been deleted by hand, the call
 * goes on with the two statements). A renewal of a lease this store last granted to the same
 * holder is one cheaper statement that only extends the expiry of a row that still shows that
 * holder unexpired; should it not (lost, released), the call goes on with the two statements.
 * Release sets {@code holder = NULL} and keeps the row; nothing here ever deletes a row. The batch
 * calls ({@link #acquireOrRenewAll}, {@link #releaseAll}) do the same for many names in one round
 * trip, over arrays ({@code unnest}, {@code = ANY}); a batch renewal of names this store last
 * granted to the same holder is one {@code UPDATE} of their expiries only (see
 * {@link #acquireOrRenewAll}).
 *
 * <h2>Tokens</h2>
 * A renewal by the holder within its unexpired tenure keeps its token; every other grant takes a
 * new value from the sequence only in the {@code UPDATE}, that is <em>after</em> the row is locked
 * (on the insert path too: the free row is inserted first, and a grant that waited behind another
 * transaction's insert or delete draws once that transaction has ended). So tokens for a name only
 * grow, in the order the grants commit: across release, expiry, a {@code DELETE} of the row by hand
 * (even racing a grant), a dropped and re-created table (the sequence is deliberately not owned by
 * the table: do not drop it) and a crash restart of the server. Do not give the sequence a
 * {@code CACHE} above 1: sessions would then hand out values out of order. Every write commits
 * durably: where the session's {@code synchronous_commit} is {@code off}, the statement raises it
 * to {@code on} for its own transaction (a crash would otherwise forget acknowledged grants and
 * hand a token out twice). Caveat outside this class's control: a failover to an asynchronous
 * replica loses what it had not received. A {@code DELETE} racing a call between
 * its two statements makes it answer "not granted" although the name is free; the next call gets it.
 *
 * <p>{@link #token} and {@link #inspect} answer the row's token while the row exists. Without a row
 * (never granted, or deleted out of band) they answer the sequence's last value (empty / 0 only if
 * it has never issued one): at least every token this store's table has issued, for any name, and
 * below every later grant. Reading it needs {@code SELECT} on the sequence.
 *
 * <h2>Time</h2>
 * Expiry and {@link LeaseState.Held#remaining()} are computed by the server with
 * {@code clock_timestamp()} (the current time; never {@code now()}, which is the start of the
 * transaction). A step of the server's clock moves every expiry with it.
 *
 * <h2>Bounded calls</h2>
 * Every statement carries a server-side timeout of {@link Builder#callTimeout}, and the socket a
 * read timeout of that plus one second, so a call returns or throws
 * {@link LeaseStoreUnavailableException} (with the SQLState) within the pool's connection timeout
 * plus {@code callTimeout} plus one second. Use a pool that bounds {@code getConnection()} (HikariCP's
 * {@code connectionTimeout} does). On the pool's connections the server-side timeout of a call's
 * statement is a {@code set_config('statement_timeout', ..., true)} sent ahead of it in the same
 * round trip, which ends with its transaction, or the pool's own session setting where the pool
 * sets one ({@link Builder#poolBoundsStatements}): no client-side timer is armed for it, and no
 * cancel request has to cross a network that may be stalled. On a caller's connection the
 * statement goes between one that sets the timeout and one that puts back the transaction's own, in
 * the same round trip, and the same read timeout is set for the call and the caller's own put back
 * afterwards. Each statement of a round trip gets its own server-side timeout; the socket's bounds
 * the call. The rest of a batch that renewed part of its names first, and the rare second round
 * trip of a batch, keep the driver's query timeout for what is left of the call's time. The outcome
 * of a call that throws is unknown.
 *
 * <h2>Connections</h2>
 * Connections taken from the {@link DataSource} are set to autocommit and READ COMMITTED for each
 * call (racing upserts under REPEATABLE READ or SERIALIZABLE fail with 40001 instead of reading
 * the winner's row); the step, a round trip of its own, is skipped when a HikariDataSource is
 * itself configured that way, or configured with no isolation in a database whose default is READ
 * COMMITTED (asked once, on the first call; HikariCP puts a borrower's change back on return).
 * The store never closes a DataSource it was given; close it yourself after the store.
 *
 * <h2>Release hints</h2>
 * {@link #onRelease} is served by {@code LISTEN} on a dedicated connection outside the pool
 * ({@link Builder#listenConnection}), one per store from its first subscription to
 * {@link #close()} (so several stores on one database hold one each); release sends
 * {@code pg_notify} in the same transaction. Its socket reads are bounded like every call, and
 * closing the store aborts it and joins its thread.
 * Hints are lost while that connection is down (every subscriber is woken once it is back) and a
 * crashed holder sends none: followers must still poll until the expiry they last read.
 *
 * <h2>Listing</h2>
 * {@link #names} is one {@code SELECT} of the rows' names ({@code starts_with}, so the prefix is
 * literal text and {@code %} or {@code _} are plain characters; placeholders excluded; ordered
 * {@code COLLATE "C"}, which is code-point order on a UTF-8 database), bounded by the call timeout
 * like every statement. It needs {@code SELECT} on the table only ({@link #observerGrantsSql} has
 * it). Released and expired names keep their rows, so they stay listed.
 *
 * <p>Thread-safe. Calls after {@link #close()} throw {@link LeaseStoreClosedException}.
 */
public final class PostgresLeaseStore implements LeaseStore, LeaseListing {

  /** From 100 ms (below that a round trip is a large part of the lease) to 7 days, to the ms. */
  public static final TtlRange TTL_RANGE =
      new TtlRange(Duration.ofMillis(100), Duration.ofDays(7), Duration.ofMillis(1));

  /** The table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "leases";

  /** The statement timeout used unless {@link Builder#callTimeout} says otherwise. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(5);

  private static final Logger log = LoggerFactory.getLogger(PostgresLeaseStore.class);

  private static final String SEQUENCE_SUFFIX = "_token_seq";
  private static final String CHANNEL_SUFFIX = "_released";
  private static final int MAX_TABLE = SqlNames.MAX_IDENTIFIER - SEQUENCE_SUFFIX.length();
  private static final int MAX_QUALIFIED = SqlNames.MAX_IDENTIFIER - CHANNEL_SUFFIX.length();
  private static final Duration MAX_CALL_TIMEOUT = Duration.ofHours(1);
  /** Half of each page left free, so that renewing every row of a page stays HOT. */
  private static final int FILLFACTOR = 50;
  /** How many names {@link #rowSeen} remembers before it starts over. */
  private static final int ROWS_REMEMBERED = 4096;
  /** How many names {@link #lastGrantee} remembers before it starts over. */
  private static final int GRANTS_REMEMBERED = 250_000;

  private final DataSource dataSource;
  private final SqlNames names;
  private final String channel;
  private final Duration callTimeout;
  private final @Nullable SchemaCreator schema; // null when createTable is off
  private final PoolIsolation isolation;
  /**
   * Whether the pool's sessions already carry a {@code statement_timeout} within the call timeout
   * ({@link Builder#poolBoundsStatements}; the factory's own pool): then statements on its
   * connections are sent without a bound of their own.
   */
  private final boolean sessionBounded;
  /** Whether {@link #checkPoolBound} found the pool's statement timeout as declared. */
  private volatile boolean poolBoundChecked;
  private final ReleaseHints hints;
  private final @Nullable AutoCloseable owned;
  private final String grantSql;
  private final String acquireSql;
  private final String knownRowSql;
  private final String renewSql;
  private final String releaseSql;
  private final String acquireAllSql;
  private final String lockedAllSql;
  private final String renewAllSql;
  private final String releaseAllSql;
  private final String tokenSql;
  private final String sequenceBoundSql;
  private final String inspectSql;
  private final String namesSql;
  /** Each statement of {@link #prepare}'s pooled calls, as sent: see {@link #boundSql}. */
  private final Map<String, String> pooledSql;
  /** Each statement of a call on the caller's connection, as sent: see {@link #prepare}. */
  private final Map<String, String> callerSql;
  private final List<Privileges.On> needsToGrant;
  private final List<Privileges.On> needsToRelease;
  private final List<Privileges.On> needsToRead;
  private final List<Privileges.On> needsToList;
  private final AtomicBoolean closed = new AtomicBoolean();
  /**
   * Names this store has seen a row for, so that their single calls take the one-statement path
   * ({@link #knownRowSql}). Only a choice of statement: both paths are right whether the row exists
   * or not, so forgetting (when full, it starts over) or a row deleted since costs time, not
   * correctness.
   */
  private final Set<String> rowSeen = ConcurrentHashMap.newKeySet();
  /**
   * For each name, the holder this store's last answer (single or batch) granted it to, so that a
   * renewal by that holder takes the renewal fast path ({@link #renewSql}, {@link #renewAllSql}).
   * Only a choice of statement: the fast path renews only where the row still shows this holder
   * unexpired, and every name it does not renew goes on to the full path ({@link #acquireSql},
   * {@link #acquireAllSql}); a wrong or forgotten entry (when full, it starts over; a grant on a
   * caller's connection that was rolled back) costs time, not correctness.
   */
  private final Map<String, String> lastGrantee = new ConcurrentHashMap<>();

  private PostgresLeaseStore(Builder b) {
    this.dataSource = b.dataSource;
    this.names = b.names;
    this.channel = names.qualified() + CHANNEL_SUFFIX;
    this.callTimeout = b.callTimeout;
    this.owned = b.owned;
    this.sessionBounded = b.sessionBounded;
    this.needsToGrant = grantNeeds(names);
    this.needsToRelease = releaseNeeds(names);
    this.needsToRead = readNeeds(names);
    this.needsToList = Privileges.withSchema(names, Privileges.table(names, "SELECT"));
    boolean hikari = HikariSupport.isHikari(dataSource);
    this.isolation = PoolIsolation.of(dataSource);
    Supplier<Connection> listen = b.listenConnection;
    if (listen == null && hikari) {
      listen = HikariSupport.directConnections(dataSource, b.callTimeout).orElse(null);
    }
    if (listen == null) {
      log.info("{}: no LISTEN connection (pass listenConnection, or a HikariDataSource with a"
          + " jdbcUrl); onRelease hears only this store's own releases", this);
    }
    this.hints = new ReleaseHints(channel, listen, callTimeout);
    List<String> ddl = ddl(names);
    this.schema = !b.createTable ? null : new SchemaCreator(dataSource, callTimeout,
        names, List.of(
            new SchemaCreator.Relation(names.quoted(names.table() + SEQUENCE_SUFFIX), ddl.get(0)),
            new SchemaCreator.Relation(names.quotedTable(), ddl.get(1))));

    String t = names.quotedTable();
    String seq = "'" + names.quoted(names.table() + SEQUENCE_SUFFIX) + "'";
    String grantable = "(l.holder = ? OR l.holder IS NULL OR l.expires_at <= clock_timestamp())";
    String durably = " AND " + Jdbc.DURABLE;
    String grant = " token = CASE WHEN l.holder = ? AND l.expires_at > clock_timestamp()"
        + " THEN l.token ELSE nextval(" + seq + ") END,"
        + " holder = ?,"
        + " expires_at = clock_timestamp() + ? * interval '1 millisecond'";
    String placeholder = "INSERT INTO " + t + " (name, holder, token, expires_at)"
        + " VALUES (?, NULL, 1, '-infinity') ON CONFLICT (name) DO NOTHING";
    // The UPDATE grants, drawing from the sequence while it holds the row lock, so the token is
    // larger than any token a grant that committed before it drew, even one whose row was deleted
    // while this call waited.
    this.grantSql = "UPDATE " + t + " AS l SET" + grant + " WHERE l.name = ? AND " + grantable
        + durably + " RETURNING token, expires_at";
    // Two statements sent together, for a name with no row yet. The INSERT puts a placeholder in
    // place when there is no row (free, expiring at -infinity, token 1): never a grant's token, and
    // read as "no row" by token() and inspect(), so it is harmless even where the driver commits it
    // on its own (pgjdbc's preferQueryMode=simple; the extended protocol runs both in one implicit
    // transaction). Then the grant.
    this.acquireSql = placeholder + "; " + grantSql;
    // One statement, for a name that has a row (every name after its first grant: rows are never
    // deleted): the grant's UPDATE, which draws only under the row lock and, unlike an
    // INSERT ... ON CONFLICT DO UPDATE ... WHERE, locks nothing when the row is held by another (a
    // follower's poll does not queue behind the holder's renewal or make it wait). No row back
    // means the statement's snapshot shows the row held by another. A row of NULLs means neither a
    // grant nor that: the row is missing, or changed (deleted, taken) while the UPDATE waited for
    // it; the call then goes on with acquireSql, which decides on the latest rows.
    this.knownRowSql = "WITH g AS (" + grantSql + ") SELECT token, expires_at FROM g"
        + " UNION ALL SELECT NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM g)"
        + " AND NOT EXISTS (SELECT 1 FROM " + t + " AS l WHERE l.name = ? AND NOT " + grantable
        + ")";
    // The renewal fast path of the single call, for a name this store last granted to the same
    // holder: it only extends the expiry of a row that still shows this holder unexpired, so it
    // cannot change a token or grant to anyone (the same rule as the batch's renewAllSql); no row
    // back (expired, taken, released or deleted since) sends the call on to acquireSql, which
    // decides on the latest rows. About a third cheaper on the server than knownRowSql.
    this.renewSql = "UPDATE " + t + " AS l SET expires_at = clock_timestamp() + ? * interval"
        + " '1 millisecond' WHERE l.name = ? AND l.holder = ? AND l.expires_at > clock_timestamp()"
        + durably + " RETURNING token, expires_at";
    this.releaseSql = "WITH r AS (UPDATE " + t
        + " SET holder = NULL, expires_at = clock_timestamp()"
        + " WHERE name = ? AND holder = ? AND expires_at > clock_timestamp()" + durably
        + " RETURNING name)"
        + " SELECT pg_notify('" + channel + "', r.name) FROM r";
    // The batch form: the same rules, for many names in one round trip of two statements in one
    // implicit transaction. Placeholders go in for names without a row; a row is locked (in name
    // order, so that two overlapping batches cannot deadlock) only where the statement's snapshot
    // shows it grantable to this holder, and the UPDATE draws tokens only for rows locked by then.
    // A row the snapshot shows held by another is refused as the snapshot shows it, unlocked: a
    // follower's poll never makes the holder's renewal wait, and waits for nothing itself. (Locking
    // every row, as this statement once did, made a holder's renewal of 2,000 names wait seconds
    // behind a follower's batch, which rechecked each row the renewal had changed.) A row grantable
    // in the snapshot but not under its lock (taken meanwhile) comes back as "changed"; the call
    // decides those names again with lockedAllSql.
    String unnested = "unnest(?::text[]) AS u(n)";
    // The batch's names as an uncorrelated subquery's value, which the planner does not look into:
    // it then plans an index scan whatever the array and the table's size. Given the array itself
    // (as it is in a custom plan: pgjdbc's first uses of a statement, the server's first five
    // executions of a prepared one), it reads the whole table instead when the batch is a fair share
    // of it: 160 ms instead of 20 ms for 10,000 names of a 590,000-row table.
    String anyOfBatch = "ANY((SELECT ?::text[])::text[])";
    // grantable at the statement's start: the same instant for the snapshot and under the lock, and
    // never later than clock_timestamp(), so a row locked as free is still free to the UPDATE
    String free = "(l.holder = ? OR l.holder IS NULL OR l.expires_at <= statement_timestamp())";
    // The answers: the grants (g), the rows as locked (k) and as the snapshot showed them (s),
    // one after another, which the call matches up by name (answers()). Joined by name here, they
    // took one nested loop rescanning a row set per row of another when the planner, which cannot
    // see the batch's size, estimated a handful of rows: 100 million comparisons and 5.9 s for
    // 10,000 names, where a hash join takes 0.1 s.
    String answers = " SELECT " + GRANTED + ", g.name, g.token, g.expires_at, NULL, NULL::bigint,"
        + " NULL::timestamptz, NULL::timestamptz, false FROM g"
        + " UNION ALL SELECT " + LOCKED + ", k.name, NULL, NULL, k.holder, k.token, k.expires_at,"
        + " clock_timestamp(), false FROM k"
        + " UNION ALL SELECT " + SEEN + ", s.name, NULL, NULL, s.holder, s.token, s.expires_at,"
        + " clock_timestamp(), s.free FROM s";
    String update = " g AS (UPDATE " + t + " AS l SET" + grant
        + " FROM k WHERE l.name = k.name AND " + grantable + durably
        + " RETURNING l.name, l.token, l.expires_at)";
    this.acquireAllSql = "INSERT INTO " + t + " (name, holder, token, expires_at)"
        + " SELECT n, NULL, 1, '-infinity' FROM " + unnested
        + " WHERE NOT EXISTS (SELECT 1 FROM " + t + " AS e WHERE e.name = u.n) ORDER BY n"
        + " ON CONFLICT (name) DO NOTHING;"
        + " WITH s AS (SELECT l.name, l.holder, l.token, l.expires_at, " + free + " AS free"
        + " FROM " + t + " AS l WHERE l.name = " + anyOfBatch + "),"
        + " k AS (SELECT l.name, l.holder, l.token, l.expires_at FROM " + t + " AS l"
        + " WHERE l.name = " + anyOfBatch + " AND " + free + " ORDER BY l.name FOR UPDATE),"
        + update + answers;
    // For the names acquireAllSql found changed: every row locked, also those held by others, so
    // that who holds a refused name is read under its lock. Rare (a name taken between the
    // snapshot and the lock), and then few rows.
    this.lockedAllSql = "WITH s AS (SELECT l.name, l.holder, l.token, l.expires_at, false AS free"
        + " FROM " + t + " AS l WHERE l.name = " + anyOfBatch + " ORDER BY l.name FOR UPDATE),"
        + " k AS (SELECT name, holder, token, expires_at FROM s),"
        + update + answers;
    // The renewal fast path, for names this holder had at the store's last answer: one statement
    // that only extends the expiry of rows that still show this holder unexpired. It never sets a
    // token or a holder, so it cannot change a token or grant to anyone; it inserts nothing, and it
    // locks (in name order, as acquireAllSql does, so the two cannot deadlock) only rows it is
    // about to renew, never rows of other holders. A name it does not return (taken, expired,
    // released or deleted since) goes on to acquireAllSql, which decides on the latest rows.
    // The UPDATE finds the locked rows by ctid (a second lookup by name would cost as much as the
    // first); should a row have moved meanwhile, its ctid no longer matches and the name goes on to
    // the full path.
    this.renewAllSql = "WITH k AS (SELECT ctid AS id FROM " + t + " WHERE name = " + anyOfBatch
        + " AND holder = ? AND expires_at > clock_timestamp() ORDER BY name FOR NO KEY UPDATE)"
        + " UPDATE " + t + " AS l SET expires_at = clock_timestamp() + ? * interval '1 millisecond'"
        + " FROM k WHERE l.ctid = k.id AND l.holder = ? AND l.expires_at > clock_timestamp()"
        + durably + " RETURNING l.name, l.token, l.expires_at";
    this.releaseAllSql = "SELECT name FROM " + t + " WHERE name = ANY(?::text[]) AND holder = ?"
        + " ORDER BY name FOR UPDATE;"
        + " WITH r AS (UPDATE " + t + " SET holder = NULL, expires_at = clock_timestamp()"
        + " WHERE name = ANY(?::text[]) AND holder = ? AND expires_at > clock_timestamp()"
        + durably + " RETURNING name)"
        + " SELECT r.name, pg_notify('" + channel + "', r.name) FROM r";
    String granted = " WHERE name = ? AND expires_at > '-infinity'"; // not a placeholder
    this.tokenSql = "SELECT token FROM " + t + granted;
    this.sequenceBoundSql = "SELECT CASE WHEN is_called THEN last_value END FROM "
        + names.quoted(names.table() + SEQUENCE_SUFFIX);
    this.inspectSql = "SELECT holder, token, expires_at, clock_timestamp() FROM " + t + granted;
    // starts_with, not LIKE: the prefix is text, not a pattern. On a server whose index on name is
    // in the "C" collation, PostgreSQL 15 and later scan only the prefix's range of it; otherwise
    // the table is read whole (and the statement timeout bounds that): measured on PostgreSQL 14
    // with a C.UTF-8 database, a parallel sequential scan and a top-N sort, 65-150 ms for 500,000
    // rows.
    this.namesSql = "SELECT name FROM " + t + " WHERE starts_with(name, ?)"
        + " AND expires_at > '-infinity' ORDER BY name COLLATE \"C\" LIMIT ?";
    // What a pooled call sends for each statement (see prepare): behind the bound where the
    // pool's sessions do not carry it.
    String bound = sessionBounded ? "" : boundSql(callTimeout);
    Map<String, String> pooled = new HashMap<>();
    for (String sql : List.of(renewSql, knownRowSql, acquireSql, releaseSql, renewAllSql,
        acquireAllSql, releaseAllSql, tokenSql, sequenceBoundSql, inspectSql, namesSql)) {
      pooled.put(sql, bound + sql);
    }
    this.pooledSql = Map.copyOf(pooled);
    Map<String, String> caller = new HashMap<>();
    for (String sql : List.of(renewSql, knownRowSql, acquireSql)) {
      caller.put(sql, Jdbc.serverBound(sql, callTimeout));
    }
    this.callerSql = Map.copyOf(caller);
  }

  /**
   * The statement sent ahead of each statement of a call on a pool whose sessions do not carry
   * the call timeout: it sets {@code statement_timeout} for the rest of the implicit transaction
   * (the statements of one round trip), after which the session's own value is back.
   */
  private static String boundSql(Duration callTimeout) {
    return "SELECT set_config('statement_timeout', '" + callTimeout.toMillis() + "', true); ";
  }

  /** Starts configuring a store on {@code dataSource} (a pool; see the class comment). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource must not be null"));
  }

  /**
   * The DDL this store runs when {@link Builder#createTable} is on (the default), for schemas
   * managed by hand or by a migration tool: a sequence and a table, each {@code IF NOT EXISTS}.
   * Run it as the role that is to own them (an administrator); the store's own role then needs
   * only {@link #grantsSql}.
   *
   * <p>The table is created with {@code fillfactor} {@value #FILLFACTOR}: only {@code name} is
   * indexed, so a renewal is a HOT update (no index entry, no bloat) when the row's page has room
   * for its new version, and a batch renews every row of a page at once. A table created before
   * (fillfactor 100) keeps working; for the same effect run
   * {@code ALTER TABLE <table> SET (fillfactor = 50)} and then {@code VACUUM FULL <table>} (or let
   * new pages fill).
   *
   * @param table as for {@link Builder#table}
   */
  public static List<String> schemaSql(String table) {
    return ddl(parseTable(table));
  }

  /**
   * The least a role needs to hold leases with a store on {@code table}, as {@code GRANT}
   * statements an administrator runs after {@link #schemaSql}: {@code USAGE} on the schema (only
   * for a qualified {@code schema.table}; an unqualified table is found on the role's
   * {@code search_path}, and {@code public} grants {@code USAGE} to every role by default),
   * {@code SELECT, INSERT, UPDATE} on the table ({@code SELECT} because the grant reads the row it
   * updates; never {@code DELETE}: rows are kept) and {@code USAGE, SELECT} on the token sequence
   * ({@code USAGE} for {@code nextval}, {@code SELECT} for {@link #token} and {@link #inspect} of a
   * name without a row). No DDL: with the relations in place the store creates nothing (its check
   * for them needs no privilege), and {@link Builder#createTable createTable(false)} skips even
   * that check. {@link #onRelease}'s {@code LISTEN} and release's {@code pg_notify} need nothing
   * beyond PostgreSQL's defaults. For example, for {@code billing.leases} and role
   * {@code billing_app}:
   *
   * <pre>
   * GRANT USAGE ON SCHEMA "billing" TO "billing_app"
   * GRANT SELECT, INSERT, UPDATE ON TABLE "billing"."leases" TO "billing_app"
   * GRANT USAGE, SELECT ON SEQUENCE "billing"."leases_token_seq" TO "billing_app"
   * </pre>
   *
   * A call the server refuses for want of a privilege throws {@link PostgresPermissionException}
   * naming what is missing. Add {@link JdbcFence#grantsSql} for fenced writes.
   *
   * @param table as for {@link Builder#table}
   * @param role the role as PostgreSQL stores it (lower case if it was created unquoted); it is
   *     double-quoted in the statements
   */
  public static List<String> grantsSql(String table, String role) {
    SqlNames n = parseTable(table);
    return Privileges.grants(role, Privileges.withSchema(n,
        Privileges.table(n, "SELECT", "INSERT", "UPDATE"),
        Privileges.sequence(n, SEQUENCE_SUFFIX, "USAGE", "SELECT")));
  }

  /**
   * The least a read-only role needs for {@link #inspect}, {@link #token}, {@link #names} and
   * {@link #onRelease} on {@code table}: {@code USAGE} on a qualified table's schema, {@code SELECT} on the table and
   * on the token sequence. Such a role's {@link #acquireOrRenew}, {@link #release} and their batch
   * forms throw {@link PostgresPermissionException}. Parameters as for {@link #grantsSql}.
   */
  public static List<String> observerGrantsSql(String table, String role) {
    return Privileges.grants(role, readNeeds(parseTable(table)));
  }

  /** What {@link #token} and {@link #inspect} need; the other calls' needs follow. */
  private static List<Privileges.On> readNeeds(SqlNames n) {
    return Privileges.withSchema(n,
        Privileges.table(n, "SELECT"), Privileges.sequence(n, SEQUENCE_SUFFIX, "SELECT"));
  }

  private static List<Privileges.On> grantNeeds(SqlNames n) {
    return Privileges.withSchema(n, Privileges.table(n, "SELECT", "INSERT", "UPDATE"),
        Privileges.sequence(n, SEQUENCE_SUFFIX, "USAGE"));
  }

  private static List<Privileges.On> releaseNeeds(SqlNames n) {
    return Privileges.withSchema(n, Privileges.table(n, "SELECT", "UPDATE"));
  }

  private static List<String> ddl(SqlNames n) {
    return List.of(
        "CREATE SEQUENCE IF NOT EXISTS " + n.quoted(n.table() + SEQUENCE_SUFFIX)
            + " AS bigint MINVALUE 1 NO CYCLE",
        "CREATE TABLE IF NOT EXISTS " + n.quotedTable() + " ("
            + "name text PRIMARY KEY, "
            + "holder text NULL, "
            + "token bigint NOT NULL CHECK (token > 0), "
            + "expires_at timestamptz NOT NULL) WITH (fillfactor = " + FILLFACTOR + ")");
  }

  private static SqlNames parseTable(String table) {
    return SqlNames.parse("lease table", table, MAX_TABLE, MAX_QUALIFIED);
  }

  /**
   * Acquires or renews on a connection of the store's pool, in its own transaction.
   *
   * <p>The granted TTL is {@code ttl} rounded up to the millisecond; the expiry is the server's
   * {@code clock_timestamp()} at the statement plus that TTL.
   */
  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    Duration granted = checkAcquire(name, holder, ttl);
    return call("acquireOrRenew", name, needsToGrant, c -> acquire(c, true, name, holder, granted));
  }

  /**
   * Acquires or renews inside the caller's transaction, so that the grant and a fenced write (see
   * {@link JdbcFence#write(Connection, String, long, JdbcWork)}) commit or roll back together.
   *
   * <p>Contract and races:
   * <ul>
   *   <li>{@code connection} must reach the same database as the store's pool and be at READ
   *       COMMITTED; any other isolation is refused with {@link IllegalStateException} before
   *       anything is sent. Autocommit is left as the caller set it.
   *   <li>The expiry is computed from {@code clock_timestamp()} when the statement runs, not when
   *       the transaction began or commits: a late commit spends part of the TTL.
   *   <li>Until the caller commits or rolls back, the row stays locked: other contenders for this
   *       name wait (each up to its own call timeout, then fail as unavailable), and nobody else
   *       sees the grant. A rollback undoes the grant; the token it drew is never reused.
   *   <li>The call is bounded as the store's own are: the statement by the call timeout, every
   *       socket read on {@code connection} by the call timeout plus one second (its network
   *       timeout, put back to the caller's when the call returns). A read that times out closes
   *       the connection.
   *   <li>If this throws {@link LeaseStoreUnavailableException}, the caller's transaction is
   *       aborted: roll it back.
   * </ul>
   */
  public Optional<LeaseGrant> acquireOrRenew(
      Connection connection, String name, HolderId holder, Duration ttl) {
    Objects.requireNonNull(connection, "connection must not be null");
    Duration granted = checkAcquire(name, holder, ttl);
    ensureSchema();
    try (Jdbc.NetworkBound bound = Jdbc.boundNetwork(connection, callTimeout)) {
      Jdbc.requireReadCommitted(connection, "acquireOrRenew(Connection, ...)");
      return acquire(connection, false, name, holder, granted);
    } catch (SQLException e) {
      if (Privileges.denied(e)) { // the caller's transaction is aborted: nothing can be asked
        throw Privileges.refused(what("acquireOrRenew", name), e,
            "the transaction is aborted: roll it back", null, needsToGrant, callTimeout);
      }
      throw Jdbc.failed(what("acquireOrRenew", name), e);
    }
  }

  private Duration checkAcquire(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    return checkGrant(holder, ttl);
  }

  private Duration checkGrant(HolderId holder, Duration ttl) {
    Objects.requireNonNull(holder, "holder must not be null");
    Duration granted = TTL_RANGE.roundUp(TTL_RANGE.check(ttl));
    ensureOpen();
    return granted;
  }

  /**
   * A renewal of a lease this store last granted to {@code holder} ({@link #lastGrantee}): one
   * statement, {@link #renewSql}, that only extends the expiry; should it find the lease no longer
   * the holder's, the call goes on with {@link #acquireSql}. For another name with a row (seen by
   * this store): one statement, {@link #knownRowSql}, which grants, or refuses when its snapshot
   * shows the row held by another; otherwise (the row deleted by hand, or changed while the UPDATE
   * waited for it) the call goes on as for any other name, with {@link #acquireSql} (the
   * placeholder, then the grant). At most two statements either way.
   */
  private Optional<LeaseGrant> acquire(Connection c, boolean pooled, String name, HolderId holder,
      Duration ttl) throws SQLException {
    Optional<LeaseGrant> answer = grantOrRenew(c, pooled, name, holder, ttl);
    if (answer.isPresent()) {
      rememberGrant(name, holder);
    } else {
      lastGrantee.remove(name, holder.value());
    }
    return answer;
  }

  private Optional<LeaseGrant> grantOrRenew(Connection c, boolean pooled, String name,
      HolderId holder, Duration ttl) throws SQLException {
    if (holder.value().equals(lastGrantee.get(name))) {
      try (PreparedStatement ps = prepare(c, renewSql, pooled)) {
        ps.setLong(1, ttl.toMillis());
        ps.setString(2, name);
        ps.setString(3, holder.value());
        try (ResultSet rs = query(ps, pooled)) {
          if (rs.next()) {
            return Optional.of(grant(rs, name, holder, ttl));
          }
        }
      }
    } else if (rowSeen.contains(name)) {
      try (PreparedStatement ps = prepare(c, knownRowSql, pooled)) {
        setGrant(ps, 1, name, holder, ttl);
        ps.setString(6, name);
        ps.setString(7, holder.value());
        try (ResultSet rs = query(ps, pooled)) {
          if (!rs.next()) {
            return Optional.empty(); // held by another
          }
          if (rs.getObject(1) != null) {
            return Optional.of(grant(rs, name, holder, ttl));
          }
        }
      }
    }
    try (PreparedStatement ps = prepare(c, acquireSql, pooled)) {
      ps.setString(1, name);
      setGrant(ps, 2, name, holder, ttl);
      execute(ps, pooled); // first result: the placeholder INSERT's count
      if (!ps.getMoreResults()) {
        throw new IllegalStateException("the grant's UPDATE returned no result set: " + acquireSql);
      }
      try (ResultSet rs = ps.getResultSet()) {
        rememberRow(name);
        return rs.next() ? Optional.of(grant(rs, name, holder, ttl)) : Optional.empty();
      }
    }
  }

  /**
   * A statement of a call, bounded on the server by the call timeout. On a connection of the
   * store's pool ({@code pooled}): nothing to add when the pool's sessions carry the timeout
   * ({@link Builder#poolBoundsStatements}); otherwise the statement is sent behind
   * {@link #boundSql} in the same round trip, which bounds the rest of its implicit transaction and
   * ends with it, so that no client-side timer is armed (pgjdbc's wakes its thread on every
   * statement, about half of a renewal's time on 2 cores) and no cancel request has to cross a
   * network that may be stalled (the driver makes the call wait for it, up to its
   * {@code cancelSignalTimeout}). On the caller's connection, whose transaction goes on after the
   * call, the statement goes between one that bounds it and one that puts back the transaction's
   * own timeout ({@link Jdbc#serverBound}), in the same round trip.
   */
  private PreparedStatement prepare(Connection c, String sql, boolean pooled) throws SQLException {
    PreparedStatement ps = c.prepareStatement(Objects.requireNonNull(
        (pooled ? pooledSql : callerSql).get(sql), "not a statement of this store's calls"));
    if (!pooled) {
      Jdbc.noCursor(ps); // in the caller's transaction, a cursor would keep the bound from starting
    }
    return ps;
  }

  /** Whether a statement from {@link #prepare} starts with a bound's result. */
  private boolean leadingBound(boolean pooled) {
    return !pooled || !sessionBounded;
  }

  /**
   * Executes {@code ps} from {@link #prepare} ({@code pooled} as given there), leaving its
   * statement's first result current.
   */
  private void execute(PreparedStatement ps, boolean pooled) throws SQLException {
    ps.execute();
    if (leadingBound(pooled)) {
      ps.getMoreResults();
    }
  }

  /** Executes {@code ps} from {@link #prepare}, a query, and returns its rows. */
  private ResultSet query(PreparedStatement ps, boolean pooled) throws SQLException {
    if (!leadingBound(pooled)) {
      return ps.executeQuery();
    }
    ps.execute();
    if (!ps.getMoreResults()) {
      throw new IllegalStateException("the statement behind the bound returned no rows");
    }
    return ps.getResultSet();
  }

  /** Binds {@link #grantSql}'s parameters from index {@code first} on. */
  private static void setGrant(PreparedStatement ps, int first, String name, HolderId holder,
      Duration ttl) throws SQLException {
    ps.setString(first, holder.value());
    ps.setString(first + 1, holder.value());
    ps.setLong(first + 2, ttl.toMillis());
    ps.setString(first + 3, name);
    ps.setString(first + 4, holder.value());
  }

  /** A grant from a row of {@code token, expires_at}. */
  private static LeaseGrant grant(ResultSet rs, String name, HolderId holder, Duration ttl)
      throws SQLException {
    long token = rs.getLong(1);
    Instant expiresAt = rs.getObject(2, OffsetDateTime.class).toInstant();
    return new LeaseGrant(name, holder, token, expiresAt, ttl);
  }

  private void rememberRow(String name) {
    if (rowSeen.size() >= ROWS_REMEMBERED) {
      rowSeen.clear();
    }
    rowSeen.add(name);
  }

  /**
   * Frees the lease if {@code holder} has it unexpired, keeping the row and its token, and notifies
   * listeners in the same transaction.
   */
  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    ensureOpen();
    boolean released = call("release", name, needsToRelease, c -> {
      try (PreparedStatement ps = prepare(c, releaseSql, true)) {
        ps.setString(1, name);
        ps.setString(2, holder.value());
        try (ResultSet rs = query(ps, true)) {
          return rs.next();
        }
      }
    });
    if (released) {
      lastGrantee.remove(name, holder.value());
    }
    if (released && !hints.listens()) {
      hints.dispatch(name);
    }
    return released;
  }

  /**
   * Acquires or renews up to {@value LeaseStore#MAX_BATCH_SIZE} names, each under exactly the rules
   * of {@link #acquireOrRenew}, in one round trip, or two when some names need the full path after
   * the fast one:
   * <ul>
   *   <li>the <em>renewal fast path</em>, for the names this store's last batch answer granted to
   *       {@code holder}: one statement that extends the expiry of those rows that still show
   *       {@code holder} unexpired (token and holder untouched), locking them in name order;
   *   <li>the <em>full path</em>, for every other name and every name the fast path did not renew
   *       (taken, expired, released or deleted since): two statements in one transaction,
   *       placeholders inserted for names without a row, tokens drawn from the sequence only under
   *       the row's lock. Only rows the statement's snapshot shows grantable to {@code holder}
   *       are locked, in name order (so overlapping batches of several processes wait for each
   *       other instead of deadlocking); a name held by another is refused as that snapshot shows
   *       it (who holds it, until when), without a lock, so a follower's batch never makes the
   *       holder's renewal wait. A name taken between the snapshot and its lock is decided again
   *       by a third statement that locks its row and reads the refusal under the lock.
   * </ul>
   * The two paths are separate transactions: the fast path's renewals are committed before the
   * full path starts, so a call that throws may have renewed some names. Bounded like every call:
   * the fast path and the full path share one statement timeout. The rows stay locked until their
   * transaction commits, so other contenders for these names wait that long.
   */
  @Override
  public Map<String, AcquireResult> acquireOrRenewAll(
      Collection<String> names, HolderId holder, Duration ttl) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    Duration granted = checkGrant(holder, ttl);
    if (checked.isEmpty()) {
      return Map.of();
    }
    List<String> renewable = new ArrayList<>();
    List<String> full = new ArrayList<>();
    for (String name : checked) {
      (holder.value().equals(lastGrantee.get(name)) ? renewable : full).add(name);
    }
    Map<String, AcquireResult> answers = callBatch("acquireOrRenewAll", checked, needsToGrant, c -> {
      long start = System.nanoTime();
      Map<String, AcquireResult> byName = new HashMap<>();
      if (!renewable.isEmpty()) {
        renewAll(c, renewable, holder, granted, byName);
        for (String name : renewable) {
          if (!byName.containsKey(name)) {
            full.add(name);
          }
        }
      }
      if (!full.isEmpty()) {
        List<String> fresh = new ArrayList<>(full.size());
        Duration timeout = renewable.isEmpty() ? callTimeout : remaining(c, start);
        acquireAll(c, full, holder, granted, timeout, start, byName, fresh);
        rememberGrants(fresh, holder, checked.size());
      }
      return byName;
    });
    Map<String, AcquireResult> ordered = new LinkedHashMap<>();
    for (String name : checked) {
      AcquireResult a = answers.get(name);
      if (a == null) {
        // no row: deleted by hand between the statements; like the single call, "not granted"
        a = AcquireResult.Refused.unexplained(name);
      }
      if (!(a instanceof AcquireResult.Granted)) {
        lastGrantee.remove(name, holder.value());
      }
      ordered.put(name, a);
    }
    return Collections.unmodifiableMap(ordered);
  }

  /** The renewal fast path ({@link #renewAllSql}): answers only the names it renewed. */
  private void renewAll(Connection c, List<String> batch, HolderId holder, Duration ttl,
      Map<String, AcquireResult> byName) throws SQLException {
    try (PreparedStatement ps = prepare(c, renewAllSql, true)) {
      ps.setArray(1, c.createArrayOf("text", batch.toArray()));
      ps.setString(2, holder.value());
      ps.setLong(3, ttl.toMillis());
      ps.setString(4, holder.value());
      try (ResultSet rs = query(ps, true)) {
        while (rs.next()) {
          String name = rs.getString(1);
          long token = rs.getLong(2);
          Instant expiresAt = rs.getObject(3, OffsetDateTime.class).toInstant();
          byName.put(name, new AcquireResult.Granted(
              new LeaseGrant(name, holder, token, expiresAt, ttl)));
        }
      }
    }
  }

  /**
   * The full path ({@link #acquireAllSql}, then {@link #lockedAllSql} for the names it found
   * changed) for {@code batch}, bounded by {@code timeout} from {@code start}; the names it grants
   * are also added to {@code granted}.
   */
  private void acquireAll(Connection c, List<String> batch, HolderId holder, Duration ttl,
      Duration timeout, long start, Map<String, AcquireResult> byName, List<String> granted)
      throws SQLException {
    List<String> changed = new ArrayList<>();
    boolean whole = timeout.equals(callTimeout);
    try (PreparedStatement ps = whole ? prepare(c, acquireAllSql, true)
        : c.prepareStatement(acquireAllSql)) {
      if (!whole) {
        Jdbc.bound(ps, timeout); // the rest of the call's bound, below the call timeout
      }
      java.sql.Array array = c.createArrayOf("text", batch.toArray());
      ps.setArray(1, array); // the placeholders
      ps.setString(2, holder.value()); // s: whether free in the snapshot, of the names
      ps.setArray(3, array);
      ps.setArray(4, array); // k: the names, those free under the lock
      ps.setString(5, holder.value());
      grantParameters(ps, 6, holder, ttl);
      if (whole) {
        execute(ps, true); // the placeholders' count, then the answers
      } else {
        ps.execute(); // not from prepare: no bound's result before them
      }
      if (!ps.getMoreResults()) {
        throw new IllegalStateException("the batch grant returned no answers: " + acquireAllSql);
      }
      answers(ps, holder, ttl, byName, granted, changed);
    }
    if (changed.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(lockedAllSql)) {
      Jdbc.bound(ps, remaining(c, start));
      ps.setArray(1, c.createArrayOf("text", changed.toArray()));
      grantParameters(ps, 2, holder, ttl);
      ps.execute();
      answers(ps, holder, ttl, byName, granted, new ArrayList<>()); // none changed under lock
    }
  }

  /** Sets the grant's parameters, from {@code first} on: holder, holder, TTL, holder. */
  private static void grantParameters(PreparedStatement ps, int first, HolderId holder,
      Duration ttl) throws SQLException {
    ps.setString(first, holder.value());
    ps.setString(first + 1, holder.value());
    ps.setLong(first + 2, ttl.toMillis());
    ps.setString(first + 3, holder.value());
  }

  /** The kinds of row of a batch grant's answers, its first column (see {@link #answers}). */
  private static final int GRANTED = 1;
  private static final int LOCKED = 2;
  private static final int SEEN = 3;

  /** A row of a name as a batch grant read it: under its lock, or in the statement's snapshot. */
  private record Row(@Nullable String holder, long token, @Nullable Instant expiresAt,
      @Nullable Instant now, boolean free) {
    static Row of(ResultSet rs) throws SQLException {
      OffsetDateTime expires = rs.getObject(7, OffsetDateTime.class);
      OffsetDateTime now = rs.getObject(8, OffsetDateTime.class);
      return new Row(rs.getString(5), rs.getLong(6),
          expires == null ? null : expires.toInstant(), now == null ? null : now.toInstant(),
          rs.getBoolean(9));
    }
  }

  /**
   * Reads a batch grant's answers into {@code byName} and {@code granted}, and the names it found
   * changed between its snapshot and their lock (answered by neither) into {@code changed}. The
   * statement returns, one after another, the names it granted, the rows it locked and the rows
   * its snapshot showed; a name not granted is answered from its locked row where there is one
   * (each column, else the snapshot's), and is "changed" where the snapshot showed it grantable
   * but the lock did not take it.
   */
  private static void answers(PreparedStatement ps, HolderId holder, Duration ttl,
      Map<String, AcquireResult> byName, List<String> granted, List<String> changed)
      throws SQLException {
    Map<String, LeaseGrant> grants = new LinkedHashMap<>();
    Map<String, Row> locked = new HashMap<>();
    Map<String, Row> seen = new LinkedHashMap<>();
    try (ResultSet rs = ps.getResultSet()) {
      while (rs.next()) {
        String name = rs.getString(2);
        switch (rs.getInt(1)) {
          case GRANTED -> grants.put(name, new LeaseGrant(name, holder, rs.getLong(3),
              rs.getObject(4, OffsetDateTime.class).toInstant(), ttl));
          case LOCKED -> locked.put(name, Row.of(rs));
          default -> seen.put(name, Row.of(rs));
        }
      }
    }
    for (LeaseGrant g : grants.values()) {
      byName.put(g.name(), new AcquireResult.Granted(g));
      granted.add(g.name());
    }
    for (Map.Entry<String, Row> e : seen.entrySet()) {
      String name = e.getKey();
      if (grants.containsKey(name)) {
        continue;
      }
      Row k = locked.get(name);
      Row s = e.getValue();
      if (k == null && s.free()) {
        changed.add(name);
      } else {
        byName.put(name, refused(name, k, s));
      }
    }
  }

  /** A refusal read from the name's locked row {@code k} (column by column, else {@code s}). */
  private static AcquireResult refused(String name, @Nullable Row k, Row s) {
    String other = k != null && k.holder() != null ? k.holder() : s.holder();
    if (other == null) {
      return AcquireResult.Refused.unexplained(name);
    }
    long token = k != null ? k.token() : s.token();
    Instant expiresAt = k != null && k.expiresAt() != null ? k.expiresAt() : s.expiresAt();
    Instant now = k != null ? k.now() : s.now();
    Duration remaining = now.isBefore(expiresAt) ? Duration.between(now, expiresAt) : Duration.ZERO;
    return new AcquireResult.Refused(name, Optional.of(
        new LeaseState.Held(name, new HolderId(other), token, expiresAt, remaining)));
  }

  /**
   * What is left of the call timeout since {@code start} (at least 1 ms, which the server then
   * cancels), with the connection's socket read timeout set to match: the second statement of a
   * call gets only the rest of the first one's bound.
   */
  private Duration remaining(Connection c, long start) throws SQLException {
    Duration left = callTimeout.minusNanos(System.nanoTime() - start);
    left = left.toMillis() < 1 ? Duration.ofMillis(1) : left;
    c.setNetworkTimeout(Jdbc.DIRECT, Jdbc.networkTimeoutMillis(left));
    return left;
  }

  /** Notes {@code name} as granted to {@code holder}, starting over when the map is full. */
  private void rememberGrant(String name, HolderId holder) {
    if (lastGrantee.size() >= GRANTS_REMEMBERED) {
      lastGrantee.clear();
    }
    lastGrantee.put(name, holder.value());
  }

  /** Notes {@code names} as granted to {@code holder}, starting over when the map is full. */
  private void rememberGrants(List<String> names, HolderId holder, int batchSize) {
    if (lastGrantee.size() + batchSize > GRANTS_REMEMBERED) {
      lastGrantee.clear();
    }
    for (String name : names) {
      lastGrantee.put(name, holder.value());
    }
  }

  /**
   * Releases up to {@value LeaseStore#MAX_BATCH_SIZE} names in one round trip, each under exactly
   * the rules of {@link #release} (rows kept with their tokens), with one {@code pg_notify} per
   * released name in the same transaction; rows are locked in name order first.
   */
  @Override
  public Map<String, Boolean> releaseAll(Collection<String> names, HolderId holder) {
    List<String> checked = LeaseArguments.requireNames(names, holder);
    ensureOpen();
    if (checked.isEmpty()) {
      return Map.of();
    }
    Map<String, Boolean> released = callBatch("releaseAll", checked, needsToRelease, c -> {
      try (PreparedStatement ps = prepare(c, releaseAllSql, true)) {
        java.sql.Array array = c.createArrayOf("text", checked.toArray());
        ps.setArray(1, array);
        ps.setString(2, holder.value());
        ps.setArray(3, array);
        ps.setString(4, holder.value());
        execute(ps, true); // the locked rows, then the released names
        if (!ps.getMoreResults()) {
          throw new IllegalStateException("the batch release returned no answers: "
              + releaseAllSql);
        }
        Map<String, Boolean> byName = new LinkedHashMap<>();
        for (String name : checked) {
          byName.put(name, false);
        }
        try (ResultSet rs = ps.getResultSet()) {
          while (rs.next()) {
            byName.put(rs.getString(1), true);
          }
        }
        return byName;
      }
    });
    boolean dispatch = !hints.listens();
    released.forEach((name, done) -> {
      if (done) {
        lastGrantee.remove(name, holder.value());
        if (dispatch) {
          hints.dispatch(name);
        }
      }
    });
    return Collections.unmodifiableMap(released);
  }

  /**
   * The row's token; without a row (never granted, or deleted out of band), the sequence's last
   * value, which is at least every token issued and below every later grant; empty only if the
   * sequence has issued none. See "Tokens" in the class comment.
   */
  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return call("token", name, needsToRead, c -> {
      try (PreparedStatement ps = prepare(c, tokenSql, true)) {
        ps.setString(1, name);
        try (ResultSet rs = query(ps, true)) {
          if (rs.next()) {
            return OptionalLong.of(rs.getLong(1));
          }
        }
      }
      return sequenceBound(c);
    });
  }

  /**
   * The sequence's last value if it has issued one: read after the row was found missing, so it is
   * at least every token a grant of the name drew before that, and every later grant draws above it.
   */
  private OptionalLong sequenceBound(Connection c) throws SQLException {
    try (PreparedStatement ps = prepare(c, sequenceBoundSql, true)) {
      try (ResultSet rs = query(ps, true)) {
        rs.next();
        long value = rs.getLong(1);
        return rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(value);
      }
    }
  }

  /**
   * Reads the row; HELD versus EXPIRED is decided with one reading of the server's clock. Without a
   * row the lease is FREE with {@link #token}'s bound as its last token (0 if none).
   */
  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    ensureOpen();
    return call("inspect", name, needsToRead, c -> {
      try (PreparedStatement ps = prepare(c, inspectSql, true)) {
        ps.setString(1, name);
        try (ResultSet rs = query(ps, true)) {
          if (!rs.next()) {
            return new LeaseState.Free(name, sequenceBound(c).orElse(0));
          }
          String holder = rs.getString(1);
          long token = rs.getLong(2);
          Instant expiresAt = rs.getObject(3, OffsetDateTime.class).toInstant();
          Instant now = rs.getObject(4, OffsetDateTime.class).toInstant();
          if (holder == null) {
            return new LeaseState.Free(name, token);
          }
          if (expiresAt.isAfter(now)) {
            return new LeaseState.Held(name, new HolderId(holder), token, expiresAt,
                Duration.between(now, expiresAt));
          }
          return new LeaseState.Expired(name, new HolderId(holder), token, expiresAt);
        }
      }
    });
  }

  /**
   * Up to {@code limit} names of rows that start with {@code prefix}, in code-point order: every
   * name ever granted in this table and not deleted by hand, whatever its state now (see
   * {@link LeaseListing}). A table that does not exist (with {@link Builder#createTable} off) has no
   * names: the answer is empty; but a table named without its schema that exists only in schemas
   * the role may not use throws {@link PostgresPermissionException} naming them.
   */
  @Override
  public List<String> names(String prefix, int limit) {
    String p = LeaseListing.requireListing(prefix, limit);
    ensureOpen();
    return call(() -> "listing of lease names starting with '" + p + "' in table " + names,
        needsToList, c -> {
          try (PreparedStatement ps = prepare(c, namesSql, true)) {
            ps.setString(1, p);
            ps.setInt(2, limit);
            List<String> found = new ArrayList<>();
            try (ResultSet rs = query(ps, true)) {
              while (rs.next()) {
                found.add(rs.getString(1));
              }
            }
            return List.copyOf(found);
          } catch (SQLException e) {
            if (Privileges.UNDEFINED_TABLE.equals(e.getSQLState())) {
              if (!c.getAutoCommit()) {
                c.rollback();
              }
              Optional<PostgresPermissionException> hidden = Privileges.hiddenBySchema(
                  "listing lease names in table " + names.qualified(), e, c, names, callTimeout);
              if (hidden.isPresent()) {
                throw hidden.get();
              }
              return List.of(); // no table, so no name was ever granted in it
            }
            throw e;
          }
        });
  }

  @Override
  public TtlRange ttlRange() {
    return TTL_RANGE;
  }

  /**
   * Registers a hint that {@code name} may have been released. The listener runs on the store's
   * LISTEN thread (or, without one, on the thread that called {@link #release}); by the time it
   * runs the lease may already be taken again. The first subscription waits up to the call timeout
   * for {@code LISTEN} to be established.
   */
  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    ensureOpen();
    return hints.subscribe(name, listener);
  }

  /**
   * Stops the LISTEN thread and, for a store opened by {@link PostgresLeaseStoreFactory}, closes
   * its pool. A DataSource passed to {@link #builder} is not closed. Leases are not released.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    hints.close();
    if (owned != null) {
      try {
        owned.close();
      } catch (Exception e) {
        log.warn("{}: closing its connection pool failed", this, e);
      }
    }
  }

  @Override
  public String toString() {
    return "PostgresLeaseStore[table=" + names + "]";
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new LeaseStoreClosedException(this + " is closed");
    }
  }

  private String what(String operation, String name) {
    return operation + " of lease '" + name + "' in table " + names;
  }

  private interface SqlCall<T> {
    T run(Connection c) throws SQLException;
  }

  private <T> T call(String operation, String name, List<Privileges.On> needs, SqlCall<T> body) {
    return call(() -> what(operation, name), needs, body);
  }

  private <T> T callBatch(String operation, List<String> batch, List<Privileges.On> needs,
      SqlCall<T> body) {
    return call(() -> operation + " of " + batch.size() + " leases (the first '" + batch.get(0)
        + "') in table " + names, needs, body);
  }

  /**
   * Runs {@code body} on a pool connection. A refusal for want of a privilege is diagnosed on the
   * same connection (autocommit, so usable after the error) against {@code needs}.
   */
  private <T> T call(Supplier<String> what, List<Privileges.On> needs, SqlCall<T> body) {
    ensureSchema();
    try (Connection c = dataSource.getConnection()) {
      if (owned != null && sessionBounded && isolation.known()) { // the factory's own pool
        Jdbc.prepareOwn(c, callTimeout);
      } else {
        Jdbc.prepare(c, isolation, callTimeout);
      }
      if (sessionBounded && !poolBoundChecked) {
        checkPoolBound(c);
      }
      try {
        return body.run(c);
      } catch (SQLException e) {
        if (Privileges.denied(e)) {
          throw Privileges.refused(what.get(), e, Jdbc.REFUSED_OUTCOME, c, needs, callTimeout);
        }
        throw e;
      }
    } catch (SQLException e) {
      throw Jdbc.failed(what.get(), e);
    }
  }

  /**
   * Checks once that the pool's sessions carry a statement timeout within the call timeout, as
   * {@link Builder#poolBoundsStatements} declared; throws until they do.
   */
  private void checkPoolBound(Connection c) throws SQLException {
    long ms;
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout'")) {
      Jdbc.bound(ps, callTimeout);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        ms = rs.getLong(1);
      }
    }
    if (ms <= 0 || ms > callTimeout.toMillis()) {
      throw new IllegalStateException("the store was built with poolBoundsStatements(), but the"
          + " pool's connection has statement_timeout = " + ms + " ms" + (ms == 0 ? " (none)" : "")
          + "; it must be 1 to " + callTimeout.toMillis() + " ms (the call timeout): set it on every"
          + " connection the pool opens (HikariCP: connectionInitSql = \"SET statement_timeout = "
          + callTimeout.toMillis() + "\"), or drop poolBoundsStatements() to have the store bound"
          + " each statement itself");
    }
    poolBoundChecked = true;
  }

  private void ensureSchema() {
    if (schema != null) {
      schema.ensure("lease table " + names);
    }
  }

  /**
   * Configures a {@link PostgresLeaseStore}. Every setter validates its argument at once and throws
   * {@link IllegalArgumentException} saying what is allowed.
   */
  public static final class Builder {
    private @Nullable DataSource dataSource;
    private SqlNames names = parseTable(DEFAULT_TABLE);
    private Duration callTimeout = DEFAULT_CALL_TIMEOUT;
    private @Nullable Supplier<Connection> listenConnection;
    private boolean createTable = true;
    private @Nullable AutoCloseable owned;
    private boolean sessionBounded;

    /** {@code dataSource} is null only for the factory, which validates settings first. */
    Builder(@Nullable DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The factory's pool, created once every other setting has been validated. */
    Builder dataSource(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      return this;
    }

    /**
     * The table, default {@value PostgresLeaseStore#DEFAULT_TABLE}: a lower-case identifier
     * ({@code [a-z_][a-z0-9_]*}) of at most 53 characters, optionally qualified as
     * {@code schema.table} with at most 54 characters in all, so that the derived sequence
     * {@code <table>_token_seq} and notification channel {@code <schema.table>_released} fit
     * PostgreSQL's 63-byte limit.
     */
    public Builder table(String table) {
      this.names = parseTable(table);
      return this;
    }

    /**
     * How long one statement may run before the server cancels it, default 5 s; at most one hour.
     * Keep it well below your TTL: a renewal that takes longer than the lease is worthless.
     */
    public Builder callTimeout(Duration callTimeout) {
      LeaseArguments.requireTimeout("callTimeout", callTimeout, MAX_CALL_TIMEOUT);
      this.callTimeout = callTimeout;
      return this;
    }

    /**
     * Where the LISTEN thread gets its connection: a new connection outside the pool on each call
     * (the store closes it). It may throw an unchecked exception; the thread retries with backoff.
     * By default, for a HikariDataSource configured with a {@code jdbcUrl}, the store opens one with
     * {@link java.sql.DriverManager} from the pool's URL, user, password and data source
     * properties (with pgjdbc's {@code connectTimeout} and {@code socketTimeout} set unless the pool
     * sets them); for any other DataSource there is none, and followers rely on polling. The store
     * sets the connection's network timeout for its statements; the supplier must bound its own
     * connect and login (with pgjdbc: {@code connectTimeout} and {@code socketTimeout}), since a
     * connect in progress cannot be aborted: {@link PostgresLeaseStore#close()} waits for it only
     * up to a bound and then leaves the thread to end when the connect returns.
     */
    public Builder listenConnection(Supplier<Connection> listenConnection) {
      this.listenConnection =
          Objects.requireNonNull(listenConnection, "listenConnection must not be null");
      return this;
    }

    /**
     * Whether the store creates the sequence and table when they are missing (default true), on its
     * first call. Safe when several processes start at once. With false, create them beforehand
     * with {@link PostgresLeaseStore#schemaSql(String)}.
     */
    public Builder createTable(boolean createTable) {
      this.createTable = createTable;
      return this;
    }

    /** A resource closed with the store: the factory's own pool. */
    Builder closeWithStore(AutoCloseable resource) {
      this.owned = resource;
      return this;
    }

    /**
     * Declares that the pool gives every connection it opens a {@code statement_timeout} of at
     * most the call timeout, and that nothing changes it while a connection sits in the pool: a
     * pool of the store's own, e.g. HikariCP with {@code connectionInitSql = "SET statement_timeout
     * = 5000"} (the factory configures its pool so). The store then sends its calls' statements
     * without a bound of their own: without this it sends {@code set_config('statement_timeout',
     * ..., true)} ahead of each one, in the same round trip, about a fifth of a renewal's time on
     * the server.
     * The store checks the setting on the connection of its first call (one round trip, once) and
     * throws {@link IllegalStateException} from every call while it is 0 or above the call
     * timeout. A session whose setting is changed later (by plain SQL on a shared pool's
     * connection) leaves the store's statements bounded only by the socket timeout: do not use
     * this with a pool other code changes settings on.
     */
    public Builder poolBoundsStatements() {
      this.sessionBounded = true;
      return this;
    }

    /** Builds the store. It does not contact the database until its first call. */
    public PostgresLeaseStore build() {
      Objects.requireNonNull(dataSource, "dataSource must not be null");
      return new PostgresLeaseStore(this);
    }
  }
}
