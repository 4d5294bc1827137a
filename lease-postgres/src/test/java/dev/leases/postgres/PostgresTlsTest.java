package dev.leases.postgres;

import dev.leases.tck.servers.TestCertificates;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStoreUnavailableException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * TLS against {@link TlsPostgres}: the kit's connections are encrypted and verified
 * ({@link PostgresTlsKitTest} runs the scenarios), and a client that does not trust the server's
 * authority fails within its call timeout with a message that says why, not after a longer wait.
 */
class PostgresTlsTest {

  @Test
  void connectionsWithVerifyFullAreEncrypted() throws Exception {
    try (Connection c = DriverManager.getConnection(TlsPostgres.shared().adminUrl());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getBoolean(1)).as("this session is encrypted").isTrue();
      assertThat(rs.getString(2)).startsWith("TLSv1.");
    }
  }

  @Test
  void aWrongRootCertificateFailsWithinTheCallTimeoutSayingTheCertificateIsNotTrusted()
      throws Exception {
    TlsPostgres tls = TlsPostgres.shared();
    String url = tls.server.url() + "&" + TlsPostgres.verifyFull(tls.certs.wrongCa().toString());
    try (PostgresLeaseStore store = new PostgresLeaseStoreFactory().open(Map.of(
        PostgresLeaseStoreFactory.JDBC_URL, url,
        PostgresLeaseStoreFactory.CALL_TIMEOUT_MILLIS, "1000"))) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> store.acquireOrRenew("tls-wrong-root", HolderId.generate(),
          Duration.ofSeconds(5)))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("SSL")
          .hasMessageContaining("certification path");
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("fails within the call timeout, not after a longer wait")
          .isLessThan(Duration.ofSeconds(10));
    }
  }
}
