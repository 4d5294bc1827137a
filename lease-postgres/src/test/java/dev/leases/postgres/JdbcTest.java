package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class JdbcTest {

  /** Statement timeouts keep their milliseconds (JDBC's setQueryTimeout has whole seconds only). */
  @Test
  void statementTimeoutsAreSetToTheMillisecondThroughAPool() throws Throwable {
    try (var pool = PostgresServers.pool(1); Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT 1")) {
      Jdbc.bound(ps, Duration.ofMillis(1300));
      Class<?> pg = Class.forName("org.postgresql.jdbc.PgStatement");
      long ms = (long) MethodHandles.publicLookup()
          .findVirtual(pg, "getQueryTimeoutMs", MethodType.methodType(long.class))
          .invoke(ps.unwrap(pg));
      assertThat(ms).isEqualTo(1300);
    }
  }
}
