package dev.leases.spring.example;

// quick-start:job
import dev.leases.once.RunContext;
import dev.leases.spring.LeaseContext;
import dev.leases.spring.RunOnce;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

@Component
public class InvoiceJob {

  private final JdbcTemplate jdbc;
  private final String table;

  public InvoiceJob(JdbcTemplate jdbc, @Value("${invoices.table:invoices}") String table) {
    this.jdbc = jdbc;
    this.table = table;
  }

  /**
   * Every instance fires it; one completes each run. The run key is the cron's fire time; the
   * insert, the fence check and the completion record commit together.
   */
  @Scheduled(cron = "${invoices.cron:0 0 2 * * *}")
  @RunOnce(job = "invoices")
  @Transactional
  public void sendInvoices() {
    RunContext run = LeaseContext.currentRun().orElseThrow();
    jdbc.update("INSERT INTO " + table + " (run, token, sent_by) VALUES (?, ?, ?)",
        run.run(), run.token(), ProcessHandle.current().pid());
  }
}
// quick-start:end
