package dev.leases.examples;

// README: quick-start
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.leader.LeaderLoop;
import dev.leases.postgres.JdbcFence;
import dev.leases.postgres.PostgresLeaseStore;
import java.sql.PreparedStatement;
import java.time.Duration;

/** Lead "invoice-exporter" on PostgreSQL and do one fenced write as its leader. */
public final class QuickStart {

  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);               // jdbc:postgresql://db:5432/app?user=app&password=...
    try (HikariDataSource pool = new HikariDataSource(config);
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build();  // table "leases"
        LeaderLoop leader = LeaderLoop.builder(store, "invoice-exporter")
            .ttl(Duration.ofSeconds(30))      // renews every 10 s
            .start()) {
      JdbcFence fence = JdbcFence.builder(pool).build();                       // table "lease_fences"
      long token = leader.awaitLeadership(Duration.ofMinutes(1));               // 0: someone else leads
      if (token == 0) {
        System.out.println("another process leads invoice-exporter");
        return;
      }
      // The fence check and the write commit in one transaction; a superseded leader's write
      // throws FencedOutException and changes nothing.
      int rows = fence.write("invoice-export", token, connection -> {
        try (PreparedStatement ps = connection.prepareStatement(
            "UPDATE export_state SET last_run_at = now()")) {
          return ps.executeUpdate();
        }
      });
      System.out.println("leader with token " + token + ": updated " + rows + " row(s)");
    }
  }
}
// README: end
