package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.postgres.PostgresServers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Runs the README's programs as a user would, against the test PostgreSQL. */
class ExamplesTest {

  @BeforeAll
  static void tables() throws Exception {
    try (Connection c = PostgresServers.connect(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS invoice_runs (day text NOT NULL, token bigint NOT NULL)");
      s.execute("CREATE TABLE IF NOT EXISTS export_state (last_run_at timestamptz)");
      s.execute("INSERT INTO export_state SELECT NULL WHERE NOT EXISTS (SELECT 1 FROM export_state)");
    }
  }

  private static long count(String sql) throws Exception {
    try (Connection c = PostgresServers.connect(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void theNightlyJobRunsOncePerDayHoweverOftenItIsFired() throws Exception {
    String day = "2026-12-01-" + UUID.randomUUID();
    String url = PostgresServers.url();
    String first = ProgramOutput.of(() -> NightlyInvoiceRun.main(new String[] {url, day}));
    String second = ProgramOutput.of(() -> NightlyInvoiceRun.main(new String[] {url, day}));
    assertThat(first).startsWith("Completed[");
    assertThat(second).startsWith("AlreadyCompleted[");
    assertThat(count("SELECT count(*) FROM invoice_runs WHERE day = '" + day + "'")).isOne();
  }

  @Test
  void theQuickStartLeadsAndWritesThroughTheFence() throws Exception {
    String url = PostgresServers.url();
    String out = ProgramOutput.of(() -> QuickStart.main(new String[] {url}));
    assertThat(out).containsPattern("leader with token [1-9][0-9]*: updated 1 row\\(s\\)");
    assertThat(count("SELECT count(*) FROM export_state WHERE last_run_at IS NOT NULL")).isOne();
  }
}
