package dev.leases.consul;

import dev.leases.spi.SecretSetting;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.jspecify.annotations.Nullable;

/**
 * HTTPS settings of a client the library builds: the authority to trust (PEM; null: the JDK's
 * default trust store) and, for agents with {@code verify_incoming}, a client certificate and its
 * unencrypted PKCS#8 key (PEM). Files are checked when set and loaded when the client is built.
 *
 * @param trustCert PEM certificate(s) of the authority that signed the agent's certificate, or null
 * @param clientCert PEM client certificate (chain), or null
 * @param clientKey its PEM key ({@code -----BEGIN PRIVATE KEY-----}), or null
 */
record ConsulTls(Path trustCert, Path clientCert, Path clientKey) {

  private static final Pattern PKCS8 = Pattern.compile(
      "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");

  /** The loaded context and the trust manager OkHttp needs alongside it. */
  record Context(SSLContext ssl, X509TrustManager trust) {}

  ConsulTls {
    if ((clientCert == null) != (clientKey == null)) {
      throw new IllegalArgumentException("a client certificate needs its key and a key its"
          + " certificate; got only the " + (clientCert == null ? "key " + clientKey
          : "certificate " + clientCert));
    }
    readable("trust certificate", trustCert);
    readable("client certificate", clientCert);
    readable("client key", clientKey);
  }

  private static void readable(String what, Path file) {
    if (file != null && !Files.isReadable(file)) {
      throw new IllegalArgumentException("the TLS " + what + " file " + file + " does not exist or"
          + " is not readable by this process");
    }
  }

  /** Loads the files; an {@link IllegalArgumentException} naming the file that cannot be used. */
  Context load() {
    try {
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      if (trustCert == null) {
        tmf.init((KeyStore) null);
      } else {
        KeyStore trusted = emptyStore();
        int i = 0;
        for (Certificate c : certificates("trust certificate", trustCert)) {
          trusted.setCertificateEntry("ca-" + i++, c);
        }
        tmf.init(trusted);
      }
      X509TrustManager trust = null;
      for (TrustManager tm : tmf.getTrustManagers()) {
        if (tm instanceof X509TrustManager x) {
          trust = x;
        }
      }
      KeyManagerFactory kmf = null;
      if (clientCert != null) {
        KeyStore keys = emptyStore();
        char[] none = new char[0];
        keys.setKeyEntry("client", key(), none,
            certificates("client certificate", clientCert).toArray(Certificate[]::new));
        kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, none);
      }
      SSLContext ssl = SSLContext.getInstance("TLS");
      ssl.init(kmf == null ? null : kmf.getKeyManagers(), new TrustManager[] {trust}, null);
      return new Context(ssl, trust);
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalArgumentException("cannot set up TLS from the trust certificate "
          + (trustCert == null ? "(the JDK's default trust store)" : trustCert)
          + ", client certificate " + clientCert + " and client key " + clientKey + ": " + e, e);
    }
  }

  private static KeyStore emptyStore() throws GeneralSecurityException, IOException {
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    return ks;
  }

  private static List<? extends Certificate> certificates(String what, Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      Collection<? extends Certificate> certs =
          CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (certs.isEmpty()) {
        throw new IllegalArgumentException("the TLS " + what + " file " + file + " holds no"
            + " certificate; give a PEM file (-----BEGIN CERTIFICATE-----)");
      }
      return List.copyOf(certs);
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("the TLS " + what + " file " + file + " is not a PEM"
          + " certificate (-----BEGIN CERTIFICATE-----): " + e.getMessage(), e);
    }
  }

  /** The client key: PKCS#8, RSA or EC. Messages never quote the file's content. */
  private PrivateKey key() {
    Matcher m = PKCS8.matcher(SecretSetting.readFile(null, "TLS client key file", clientKey));
    if (!m.find()) {
      throw new IllegalArgumentException("the TLS client key file " + clientKey + " is not an"
          + " unencrypted PKCS#8 PEM key (-----BEGIN PRIVATE KEY-----); convert it with"
          + " openssl pkcs8 -topk8 -nocrypt");
    }
    byte[] der = Base64.getMimeDecoder().decode(m.group(1));
    for (String algorithm : List.of("EC", "RSA", "Ed25519")) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // try the next algorithm
      }
    }
    throw new IllegalArgumentException("the TLS client key file " + clientKey + " holds a PKCS#8"
        + " key that is neither EC, RSA nor Ed25519");
  }

  /**
   * After a request to {@code url} failed with a broken connection, asks the agent directly
   * whether TLS refuses this client: one TLS connection with {@code ssl} (null: the JDK's default)
   * sending one small request ({@code GET /v1/status/leader}) and reading the first byte of the
   * answer, every step bounded by {@code timeout}. Under TLS 1.3 the agent judges the client's
   * certificate after the client considers the handshake done, so the request that met its refusal
   * may see only a broken pipe or a shut-down connection, the alert unread; this read sees it.
   *
   * @return the TLS failure the agent reported, or null if there was none (the agent answered, or
   *     the connection failed otherwise)
   */
  static @Nullable SSLException refusal(URI url, @Nullable SSLContext ssl, Duration timeout) {
    int ms = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    int port = url.getPort() > 0 ? url.getPort() : 443;
    try {
      SSLSocketFactory f = ssl != null ? ssl.getSocketFactory() : SSLContext.getDefault()
          .getSocketFactory();
      try (Socket raw = new Socket()) {
        raw.connect(new InetSocketAddress(url.getHost(), port), ms);
        raw.setSoTimeout(ms);
        try (SSLSocket s = (SSLSocket) f.createSocket(raw, url.getHost(), port, false)) {
          s.startHandshake();
          OutputStream out = s.getOutputStream();
          out.write(("GET /v1/status/leader HTTP/1.1\r\nHost: " + url.getHost()
              + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
          out.flush();
          s.getInputStream().read();
          return null;
        }
      }
    } catch (SSLException e) {
      return e;
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      return null;
    }
  }
}
