package dev.leases.etcd;

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
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Throw-away PEM files for TLS tests, made by the JDK's {@code keytool} in a fresh 0700 directory
 * (every file 0600, nothing committed): an authority, a server certificate it signed for
 * {@code localhost} and {@code 127.0.0.1}, a client certificate it signed ({@code CN=leases-client},
 * for mutual TLS), and an unrelated authority with a client certificate of its own for negative
 * tests. Keys are unencrypted PKCS#8 ({@code -----BEGIN PRIVATE KEY-----}).
 */
final class EtcdCertificates {

  final Path dir;
  final Path ca;
  final Path serverCert;
  final Path serverKey;
  final Path clientCert;
  final Path clientKey;
  /** An authority that signed neither the server's nor the client's certificate. */
  final Path wrongCa;
  final Path wrongClientCert;
  final Path wrongClientKey;

  private final String pass = "k" + HexFormat.of().formatHex(randomBytes());

  private EtcdCertificates(Path dir) {
    this.dir = dir;
    this.ca = dir.resolve("ca.crt");
    this.serverCert = dir.resolve("server.crt");
    this.serverKey = dir.resolve("server.key");
    this.clientCert = dir.resolve("client.crt");
    this.clientKey = dir.resolve("client.key");
    this.wrongCa = dir.resolve("wrong-ca.crt");
    this.wrongClientCert = dir.resolve("wrong-client.crt");
    this.wrongClientKey = dir.resolve("wrong-client.key");
  }

  static EtcdCertificates create() throws Exception {
    Path dir = Files.createTempDirectory("leases-etcd-tls-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    EtcdCertificates c = new EtcdCertificates(dir);
    c.authority("ca", "CN=leases etcd test CA", c.ca);
    c.authority("wrong-ca", "CN=leases unrelated CA", c.wrongCa);
    c.issue("ca", "server", "CN=localhost", "san=dns:localhost,ip:127.0.0.1", "serverAuth",
        c.serverCert, c.serverKey);
    c.issue("ca", "client", "CN=leases-client", null, "clientAuth", c.clientCert, c.clientKey);
    c.issue("wrong-ca", "wrong-client", "CN=leases-client", null, "clientAuth", c.wrongClientCert,
        c.wrongClientKey);
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        if (f.toString().endsWith(".p12") || f.toString().endsWith(".csr")) {
          Files.delete(f); // only the PEM files stay
        } else {
          Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        }
      }
    }
    return c;
  }

  private void authority(String alias, String dname, Path pem) throws Exception {
    keytool("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", dname, "-ext", "bc:c", "-validity", "2", "-keystore", alias + ".p12");
    keytool("-exportcert", "-rfc", "-alias", alias, "-keystore", alias + ".p12",
        "-file", pem.getFileName().toString());
  }

  private void issue(String ca, String alias, String dname, String san, String eku, Path certPem,
      Path keyPem) throws Exception {
    keytool("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", dname, "-validity", "2", "-keystore", alias + ".p12");
    keytool("-certreq", "-alias", alias, "-keystore", alias + ".p12", "-file", alias + ".csr");
    List<String> gencert = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", ca,
        "-keystore", ca + ".p12", "-infile", alias + ".csr",
        "-outfile", certPem.getFileName().toString(), "-validity", "2", "-ext", "eku=" + eku,
        "-ext", "ku:c=digitalSignature,keyAgreement"));
    if (san != null) {
      gencert.addAll(List.of("-ext", san));
    }
    keytool(gencert.toArray(String[]::new));
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve(alias + ".p12"))) {
      ks.load(in, pass.toCharArray());
    }
    PrivateKey key = (PrivateKey) ks.getKey(alias, pass.toCharArray());
    Files.writeString(keyPem, "-----BEGIN PRIVATE KEY-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(key.getEncoded())
        + "\n-----END PRIVATE KEY-----\n", StandardCharsets.US_ASCII);
  }

  private void keytool(String... args) throws Exception {
    List<String> argv = new ArrayList<>();
    argv.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    argv.addAll(List.of(args));
    argv.addAll(List.of("-storetype", "PKCS12", "-storepass", pass, "-noprompt"));
    if (args[0].equals("-genkeypair")) {
      argv.addAll(List.of("-keypass", pass));
    }
    Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("keytool " + args[0] + " failed: " + out);
    }
  }

  private static byte[] randomBytes() {
    byte[] b = new byte[8];
    ThreadLocalRandom.current().nextBytes(b);
    return b;
  }
}
