package dev.leases.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away certificate authority and a server certificate it signed for {@code localhost} and
 * {@code 127.0.0.1}, made by the JDK's {@code keytool} (no OpenSSL needed, no key committed), plus
 * an unrelated authority for negative tests. Written as PEM to a fresh directory; the server's key
 * file is 0600, as PostgreSQL requires.
 */
final class TestCertificates {

  final Path dir;
  /** The authority that signed the server's certificate. */
  final Path rootCert;
  /** An authority that signed nothing here. */
  final Path wrongRootCert;
  final Path serverCert;
  final Path serverKey;

  private TestCertificates(Path dir) {
    this.dir = dir;
    this.rootCert = dir.resolve("root.crt");
    this.wrongRootCert = dir.resolve("wrong-root.crt");
    this.serverCert = dir.resolve("server.crt");
    this.serverKey = dir.resolve("server.key");
  }

  static TestCertificates create() throws Exception {
    Path dir = Files.createTempDirectory("leases-pg-tls-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    TestCertificates t = new TestCertificates(dir);
    String pass = "p" + LeastPrivilegeSchema.random();
    t.keytool(pass, "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=leases test CA", "-ext", "bc:c", "-validity", "2", "-keystore", "ca.p12");
    t.keytool(pass, "-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12",
        "-file", "root.crt");
    t.keytool(pass, "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=leases unrelated CA", "-ext", "bc:c", "-validity", "2",
        "-keystore", "wrong-ca.p12");
    t.keytool(pass, "-exportcert", "-rfc", "-alias", "ca", "-keystore", "wrong-ca.p12",
        "-file", "wrong-root.crt");
    t.keytool(pass, "-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=localhost", "-validity", "2", "-keystore", "server.p12");
    t.keytool(pass, "-certreq", "-alias", "server", "-keystore", "server.p12",
        "-file", "server.csr");
    t.keytool(pass, "-gencert", "-rfc", "-alias", "ca", "-keystore", "ca.p12",
        "-infile", "server.csr", "-outfile", "server.crt", "-validity", "2",
        "-ext", "san=dns:localhost,ip:127.0.0.1", "-ext", "eku=serverAuth",
        "-ext", "ku:c=digitalSignature,keyAgreement");
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve("server.p12"))) {
      ks.load(in, pass.toCharArray());
    }
    PrivateKey key = (PrivateKey) ks.getKey("server", pass.toCharArray());
    Files.createFile(t.serverKey,
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(t.serverKey, "-----BEGIN PRIVATE KEY-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(key.getEncoded())
        + "\n-----END PRIVATE KEY-----\n", StandardCharsets.US_ASCII);
    for (String keystore : List.of("ca.p12", "wrong-ca.p12", "server.p12", "server.csr")) {
      Files.delete(dir.resolve(keystore)); // only the PEM files the test needs stay
    }
    return t;
  }

  private void keytool(String pass, String... args) throws Exception {
    List<String> argv = new ArrayList<>();
    argv.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    argv.addAll(List.of(args));
    argv.addAll(List.of("-storetype", "PKCS12", "-storepass", pass, "-noprompt"));
    if (List.of(args).contains("-genkeypair")) {
      argv.addAll(List.of("-keypass", pass));
    }
    Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("keytool " + String.join(" ", args) + " failed: " + out);
    }
  }
}
