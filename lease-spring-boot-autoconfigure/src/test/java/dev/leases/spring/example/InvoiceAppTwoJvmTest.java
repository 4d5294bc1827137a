package dev.leases.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leases.postgres.PostgresServers;
import dev.leases.tck.process.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
    Path log = Files.createTempFile("invoice-app-", ".log");
    List<ChildJvm> jvms = new ArrayList<>();
    try {
      for (int i = 0; i < 2; i++) {
        jvms.add(ChildJvm.start(InvoiceAppMain.class, args, log));
      }
      for (ChildJvm j : jvms) {
        assertThat(j.awaitLine("READY", 0, Duration.ofSeconds(120)))
            .as("child ready; log %s", log).isPresent();
      }
      await().atMost(Duration.ofMinutes(2)).ignoreExceptions().until(() -> count(
          "SELECT count(*) FROM r_" + s + " WHERE status = 'COMPLETED'") >= 8);
      Map<Long, Map<String, Double>> runsByPid = new LinkedHashMap<>();
      for (ChildJvm j : jvms) {
        int from = j.lineCount();
        j.send("stop");
        assertThat(j.awaitLine("CLOSED", from, Duration.ofSeconds(60))).isPresent();
        Map<String, Double> outcomes = new LinkedHashMap<>();
        for (String line : j.transcript()) {
          if (line.startsWith("RUNS ")) {
            String[] p = line.split(" ");
            outcomes.put(p[1], Double.parseDouble(p[2]));
          }
        }
        runsByPid.put(j.pid(), outcomes);
      }
      long rows = count("SELECT count(*) FROM inv_" + s);
      long distinctRuns = count("SELECT count(DISTINCT run) FROM inv_" + s);
      long completed = count("SELECT count(*) FROM r_" + s + " WHERE status = 'COMPLETED'");
      long completedRuns = count("SELECT count(DISTINCT run) FROM r_" + s
          + " WHERE status = 'COMPLETED'");
      double completedByJvms = runsByPid.values().stream()
          .mapToDouble(o -> o.getOrDefault("completed", 0d)).sum();
      System.out.println("two-JVM result: outcomes per JVM " + runsByPid + "; business rows "
          + rows + ", distinct runs " + distinctRuns + ", completion records " + completed);
      assertThat(rows).isEqualTo(distinctRuns);
      assertThat(completed).isEqualTo(completedRuns).isEqualTo(rows);
      assertThat(completedByJvms).isEqualTo((double) rows);
      assertThat(runsByPid.values()).allSatisfy(o ->
          assertThat(o.values().stream().mapToDouble(Double::doubleValue).sum()).isPositive());
      // both JVMs fired every second, so most runs were fired twice and completed once
      double fired = runsByPid.values().stream()
          .flatMap(o -> o.values().stream()).mapToDouble(Double::doubleValue).sum();
      assertThat(fired).isGreaterThan(rows);
    } finally {
      for (ChildJvm j : jvms) {
        j.close();
      }
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
