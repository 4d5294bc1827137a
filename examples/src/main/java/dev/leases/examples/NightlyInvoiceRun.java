package dev.leases.examples;

// README: exactly-once
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunOutcome;
import dev.leases.postgres.JdbcRunLedger;
import dev.leases.postgres.PostgresLeaseStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;

/** Run the nightly invoice job exactly once per day, however many processes fire it. */
public final class NightlyInvoiceRun {

  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);               // jdbc:postgresql://db:5432/app?user=app&password=...
    String day = args.length > 1 ? args[1] : LocalDate.now(ZoneOffset.UTC).toString();
    try (HikariDataSource pool = new HikariDataSource(config);
        PostgresLeaseStore store = PostgresLeaseStore.builder(pool).build();
        ExactlyOnce<Connection> once = ExactlyOnce.builder(store, JdbcRunLedger.builder(pool).build())
            .ttl(Duration.ofSeconds(30)).build()) {
      RunOutcome outcome = once.run("nightly-invoice-run", day, (connection, run) -> {
        // Everything written on this connection commits together with the completion record,
        // under the lease's fencing token: all of it happens once, or none of it.
        try (PreparedStatement ps = connection.prepareStatement(
            "INSERT INTO invoice_runs (day, token) VALUES (?, ?)")) {
          ps.setString(1, run.run());
          ps.setLong(2, run.token());
          ps.executeUpdate();
        }
      });
      System.out.println(outcome);            // Completed, AlreadyCompleted or RunningElsewhere
    }
  }
}
// README: end
