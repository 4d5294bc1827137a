package dev.leases.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.FencedOutException;
import dev.leases.leader.LeaderLoop;
import dev.leases.postgres.JdbcFence;
import dev.leases.postgres.PostgresLeaseStore;
import dev.leases.postgres.PostgresLeaseStoreFactory;
import dev.leases.tck.process.LeaderProcess;
import dev.leases.tck.process.StoreRecipe;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;

/**
 * The paused-leader story end to end, on a real PostgreSQL: worker A (a separate JVM) leads and
 * starts a run; A is frozen with SIGSTOP past its TTL; worker B takes over with a larger token and
 * writes; A is resumed and finishes its write with the token it started with — and the fenced
 * resource rejects it, zero rows changed. Exit status 0 only if no stale write was accepted.
 */
final class Demo {

  private static final String LEASE = "nightly-invoice-run";

  private Demo() {}

  static int run(String[] args, PrintStream out) throws Exception {
    long ttlMs = 2000;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--ttl-ms") && i + 1 < args.length) {
        ttlMs = Long.parseLong(args[++i]);
      } else {
        throw new IllegalArgumentException("unknown option " + args[i] + "\n\n" + Main.USAGE);
      }
    }
    Duration ttl = Duration.ofMillis(ttlMs);
    long t0 = System.nanoTime();
    String external = System.getenv("LEASES_POSTGRES_URL");
    EmbeddedPostgres embedded = null;
    String url;
    if (external != null && !external.isBlank()) {
      url = external;
      out.println("PostgreSQL: external server from $LEASES_POSTGRES_URL");
    } else {
      embedded = EmbeddedPostgres.builder().start();
      url = embedded.getJdbcUrl("postgres", "postgres");
      out.printf("PostgreSQL: embedded server started on port %d in %.1f s%n",
          embedded.getPort(), secondsSince(t0));
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(4);
    try (HikariDataSource pool = new HikariDataSource(config);
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build()) {
      JdbcFence fence = JdbcFence.builder(pool).build();
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS invoice_runs");
        s.execute("CREATE TABLE invoice_runs (id serial PRIMARY KEY, worker text NOT NULL,"
            + " token bigint NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      }
      out.printf("lease '%s', TTL %d ms, renewed every %d ms; resource: table invoice_runs behind"
          + " a JdbcFence%n%n", LEASE, ttl.toMillis(), ttl.dividedBy(3).toMillis());

      StoreRecipe recipe = new StoreRecipe(PostgresLeaseStoreFactory.class,
          Map.of(PostgresLeaseStoreFactory.JDBC_URL, url));
      int stale = 0;
      try (LeaderProcess a = LeaderProcess.start(recipe, LEASE, ttl, ttl.dividedBy(3))) {
        String acquired = a.awaitLine("ACQUIRED ", 0, Duration.ofSeconds(60));
        long ta = Long.parseLong(acquired.substring("ACQUIRED ".length()));
        long captured = a.ask("CAPTURE", "CAPTURED", Duration.ofSeconds(10));
        out.printf("1. worker A (pid %d) leads with token %d and starts the run%n", a.pid(), ta);
        insert(fence, "A", captured);
        out.printf("   A writes with token %d: accepted%n", captured);

        a.signal("STOP");
        long stoppedAt = System.nanoTime();
        out.printf("2. worker A is frozen with SIGSTOP mid-run; it still believes it leads%n");

        try (LeaderLoop b = LeaderLoop.builder(store, LEASE).ttl(ttl).start()) {
          long tb = b.awaitLeadership(ttl.multipliedBy(10));
          if (tb == 0) {
            throw new IllegalStateException("worker B did not take over within " + ttl.multipliedBy(10));
          }
          out.printf("3. worker B takes over %.2f s after A froze (A's lease expired by the"
              + " database's clock) with token %d%n", secondsSince(stoppedAt), tb);
          insert(fence, "B", b.currentToken());
          out.printf("   B writes with token %d: accepted%n", tb);

          a.signal("CONT");
          long staleToken = a.ask("WRITE", "WRITE", Duration.ofSeconds(10));
          out.printf("4. worker A resumes after %.2f s and finishes its run with token %d%n",
              secondsSince(stoppedAt), staleToken);
          try {
            insert(fence, "A (stale)", staleToken);
            stale++;
            out.printf("   SAFETY VIOLATION: the stale write was accepted%n");
          } catch (FencedOutException e) {
            out.printf("   REJECTED by the fence, zero rows changed: %s%n", e.getMessage());
          }
          String lost = a.awaitLine("LOST ", 0, ttl.multipliedBy(5));
          out.printf("   A's leader loop reports: %s%n", lost);
          insert(fence, "B", b.currentToken());
          out.printf("5. B keeps working with token %d%n%n", b.currentToken());
        }
      }
      out.println("invoice_runs:");
      out.println("  id | worker    | token");
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT id, worker, token FROM invoice_runs ORDER BY id")) {
        while (rs.next()) {
          out.printf("  %2d | %-9s | %d%n", rs.getInt(1), rs.getString(2), rs.getLong(3));
        }
      }
      out.printf("%nstale writes accepted: %d (must be 0); demo took %.1f s%n", stale,
          secondsSince(t0));
      return stale == 0 ? 0 : 1;
    } finally {
      if (embedded != null) {
        embedded.close();
      }
    }
  }

  private static void insert(JdbcFence fence, String worker, long token) {
    fence.write(LEASE, token, c -> {
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO invoice_runs (worker, token) VALUES (?, ?)")) {
        ps.setString(1, worker);
        ps.setLong(2, token);
        return ps.executeUpdate();
      }
    });
  }

  private static double secondsSince(long nanos) {
    return (System.nanoTime() - nanos) / 1e9;
  }
}
