package dev.leases.postgres;

import dev.leases.tck.servers.TestCertificates;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.Map;

/**
 * An embedded PostgreSQL of its own that accepts TCP connections only over TLS ({@code ssl=on},
 * a server certificate from {@link TestCertificates}) and, for every role but the superuser
 * {@code postgres}, only with a SCRAM password; restartable like the shared one. One per test JVM,
 * started on first use, stopped at exit.
 */
final class TlsPostgres {

  private static TlsPostgres shared;

  final TestCertificates certs;
  final RestartablePostgres server;

  private TlsPostgres(TestCertificates certs, RestartablePostgres server) {
    this.certs = certs;
    this.server = server;
  }

  static synchronized TlsPostgres shared() throws Exception {
    if (shared == null) {
      TestCertificates certs = TestCertificates.create("leases-pg-tls-");
      RestartablePostgres server = RestartablePostgres.start(Map.of(
          "ssl", "on",
          "ssl_cert_file", certs.serverCert().toString(),
          "ssl_key_file", certs.serverKey().toString(),
          "password_encryption", "scram-sha-256"), dir -> {
            try {
              Files.writeString(dir.resolve("pg_hba.conf"), String.join("\n",
                  "local all all trust",
                  "hostssl all postgres 127.0.0.1/32 trust",
                  "hostssl all postgres ::1/128 trust",
                  "hostssl all all 127.0.0.1/32 scram-sha-256",
                  "hostssl all all ::1/128 scram-sha-256",
                  "hostnossl all all 0.0.0.0/0 reject",
                  "hostnossl all all ::/0 reject", ""));
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          });
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          server.close();
        } catch (IOException e) {
          // best effort at JVM exit
        }
      }, "postgres-tls-test-server-stop"));
      shared = new TlsPostgres(certs, server);
    }
    return shared;
  }

  /** The superuser's URL, verifying the server's certificate and name. */
  String adminUrl() {
    return server.url() + "&" + verifyFull(certs.ca().toString());
  }

  /** pgjdbc's parameters for full verification against {@code rootCert}. */
  static String verifyFull(String rootCert) {
    return "sslmode=verify-full&sslrootcert=" + rootCert;
  }
}
