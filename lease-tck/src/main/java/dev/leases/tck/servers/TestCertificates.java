package dev.leases.tck.servers;

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
 * Throw-away PEM files for TLS tests, made by the JDK's {@code keytool} (no OpenSSL needed, nothing
 * committed) in a fresh 0700 directory, every file 0600: an authority, a server certificate it
 * signed for {@code localhost} and {@code 127.0.0.1}, a client certificate it signed
 * ({@code CN=leases-client}, for mutual TLS), and an unrelated authority with a client certificate
 * of its own for negative tests. Keys are unencrypted PKCS#8 ({@code -----BEGIN PRIVATE KEY-----}).
 *
 * @param dir the directory holding them
 * @param ca the authority that signed the server and client certificates
 * @param serverCert the server's certificate
 * @param serverKey the server's key
 * @param clientCert a client certificate signed by {@code ca}
 * @param clientKey its key
 * @param wrongCa an authority that signed neither the server's nor the client's certificate
 * @param wrongClientCert a client certificate signed by {@code wrongCa}
 * @param wrongClientKey its key
 */
public record TestCertificates(Path dir, Path ca, Path serverCert, Path serverKey,
    Path clientCert, Path clientKey, Path wrongCa, Path wrongClientCert, Path wrongClientKey) {

  /** Makes a fresh set in a new temporary directory whose name starts with {@code prefix}. */
  public static TestCertificates create(String prefix) throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory(prefix,
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    TestCertificates c = new TestCertificates(dir, dir.resolve("ca.crt"),
        dir.resolve("server.crt"), dir.resolve("server.key"), dir.resolve("client.crt"),
        dir.resolve("client.key"), dir.resolve("wrong-ca.crt"), dir.resolve("wrong-client.crt"),
        dir.resolve("wrong-client.key"));
    Keytool k = new Keytool(dir, "k" + HexFormat.of().formatHex(randomBytes()));
    k.authority("ca", "CN=leases test CA", c.ca);
    k.authority("wrong-ca", "CN=leases unrelated CA", c.wrongCa);
    k.issue("ca", "server", "CN=localhost", "san=dns:localhost,ip:127.0.0.1", "serverAuth",
        c.serverCert, c.serverKey);
    k.issue("ca", "client", "CN=leases-client", null, "clientAuth", c.clientCert, c.clientKey);
    k.issue("wrong-ca", "wrong-client", "CN=leases-client", null, "clientAuth",
        c.wrongClientCert, c.wrongClientKey);
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

  private static byte[] randomBytes() {
    byte[] b = new byte[8];
    ThreadLocalRandom.current().nextBytes(b);
    return b;
  }

  /** keytool runs in one directory with one store password. */
  private record Keytool(Path dir, String pass) {

    void authority(String alias, String dname, Path pem) throws IOException, InterruptedException {
      run("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
          "-dname", dname, "-ext", "bc:c", "-validity", "2", "-keystore", alias + ".p12");
      run("-exportcert", "-rfc", "-alias", alias, "-keystore", alias + ".p12",
          "-file", pem.getFileName().toString());
    }

    void issue(String ca, String alias, String dname, String san, String eku, Path certPem,
        Path keyPem) throws IOException, InterruptedException {
      run("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
          "-dname", dname, "-validity", "2", "-keystore", alias + ".p12");
      run("-certreq", "-alias", alias, "-keystore", alias + ".p12", "-file", alias + ".csr");
      List<String> gencert = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", ca,
          "-keystore", ca + ".p12", "-infile", alias + ".csr",
          "-outfile", certPem.getFileName().toString(), "-validity", "2", "-ext", "eku=" + eku,
          "-ext", "ku:c=digitalSignature,keyAgreement"));
      if (san != null) {
        gencert.addAll(List.of("-ext", san));
      }
      run(gencert.toArray(String[]::new));
      PrivateKey key;
      try (InputStream in = Files.newInputStream(dir.resolve(alias + ".p12"))) {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(in, pass.toCharArray());
        key = (PrivateKey) ks.getKey(alias, pass.toCharArray());
      } catch (java.security.GeneralSecurityException e) {
        throw new IOException("reading the key of " + alias + " from its keystore: " + e, e);
      }
      Files.writeString(keyPem, "-----BEGIN PRIVATE KEY-----\n"
          + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
              .encodeToString(key.getEncoded())
          + "\n-----END PRIVATE KEY-----\n", StandardCharsets.US_ASCII);
    }

    void run(String... args) throws IOException, InterruptedException {
      List<String> argv = new ArrayList<>();
      argv.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
      argv.addAll(List.of(args));
      argv.addAll(List.of("-storetype", "PKCS12", "-storepass", pass, "-noprompt"));
      if (args[0].equals("-genkeypair")) {
        argv.addAll(List.of("-keypass", pass));
      }
      Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true)
          .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IOException("keytool " + args[0] + " failed: " + out);
      }
    }
  }
}
