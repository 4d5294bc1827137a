package dev.leases.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.postgres.PostgresServers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The quick start's {@link InvoiceApp} in two application JVMs on one PostgreSQL, both firing the
 * same every-second cron: each run completes once, in one JVM, with one business row.
 */
class InvoiceAppTwoJvmTest {

  @Test
  void twoJvmsOnOneScheduleCompleteEachRunOnce() throws Exception {
    String s = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    PostgresServers.exec("CREATE TABLE invoices (run text, token bigint, sent_by bigint)"
        .replace("invoices", "inv_" + s));
    List<String> args = List.of(
        "--spring.datasource.url=" + PostgresServers.url(),
        "--spring.datasource.hikari.maximum-pool-size=4",
        "--spring.main.banner-mode=off",
        "--invoices.cron=* * * * * *",
        "--invoices.table=inv_" + s,
        "--leases.once.ttl=5s",
        "--leases.postgres.table=l_" + s,
        "--leases.postgres.fence-table=f_" + s,
        "--leases.postgres.run-table=r_" + s);
    try (AppJvms jvms = AppJvms.start(InvoiceApp.class, 2, args)) {
      await().atMost(Duration.ofMinutes(2)).ignoreExceptions().until(() -> count(
          "SELECT count(*) FROM r_" + s + " WHERE status = 'COMPLETED'") >= 8);
      Map<Long, Map<String, Double>> runsByPid = jvms.stop();
      long rows = count("SELECT count(*) FROM inv_" + s);
      long distinctRuns = count("SELECT count(DISTINCT run) FROM inv_" + s);
      long completed = count("SELECT count(*) FROM r_" + s + " WHERE status = 'COMPLETED'");
      long completedRuns = count("SELECT count(DISTINCT run) FROM r_" + s
          + " WHERE status = 'COMPLETED'");
      System.out.println("two-JVM result: outcomes per JVM " + runsByPid + "; business rows "
          + rows + ", distinct runs " + distinctRuns + ", completion records " + completed);
      assertThat(rows).isEqualTo(distinctRuns);
      assertThat(completed).isEqualTo(completedRuns).isEqualTo(rows);
      AppJvms.assertEachRunCompletedOnce(runsByPid, rows);
    }
  }

  private static long count(String sql) throws Exception {
    try (Connection c = PostgresServers.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
