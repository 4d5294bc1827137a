package dev.leases.etcd;

import dev.leases.LeaseArguments;
import io.etcd.jetcd.Client;
import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import org.jspecify.annotations.Nullable;

/**
 * What the builders of {@link EtcdLeaseStore} and {@link EtcdRunLedger} collect, validated as it is
 * set: the client (the caller's, or endpoints to build one for, with optional credentials and TLS
 * files), the key prefix and the call timeout. The password is kept only to hand it to the client;
 * nothing here prints it.
 */
final class ClientSettings {

  /** Longest accepted etcd user name. */
  static final int MAX_USER_LENGTH = 256;

  private final @Nullable Client client;
  private final @Nullable List<URI> endpoints;
  private String keyPrefix = EtcdLeaseStore.DEFAULT_KEY_PREFIX;
  private Duration callTimeout = EtcdLeaseStore.DEFAULT_CALL_TIMEOUT;
  private @Nullable String user;
  private byte @Nullable [] password;
  private boolean tls;
  private @Nullable Path trustCert;
  private @Nullable Path clientCert;
  private @Nullable Path clientKey;

  private ClientSettings(@Nullable Client client, @Nullable List<URI> endpoints) {
    this.client = client;
    this.endpoints = endpoints;
  }

  static ClientSettings of(Client client) {
    return new ClientSettings(Objects.requireNonNull(client, "client must not be null"), null);
  }

  static ClientSettings of(String... endpoints) {
    Objects.requireNonNull(endpoints, "endpoints must not be null");
    return new ClientSettings(null, EtcdLeaseStore.parseEndpoints(List.of(endpoints)));
  }

  void keyPrefix(String keyPrefix) {
    this.keyPrefix = KeyLayout.requirePrefix(keyPrefix);
  }

  void callTimeout(Duration callTimeout) {
    LeaseArguments.requireTimeout("callTimeout", callTimeout, EtcdLeaseStore.MAX_CALL_TIMEOUT);
    this.callTimeout = callTimeout;
  }

  /** The etcd user and its password (never printed, never put in a message). */
  void user(String user, String password) {
    requireOwnClient("user(...)");
    this.user = LeaseArguments.requireText("etcd user", user, MAX_USER_LENGTH);
    Objects.requireNonNull(password, "password must not be null");
    if (password.isEmpty()) {
      throw new IllegalArgumentException("the password of etcd user '" + user + "' is empty");
    }
    LeaseArguments.requireWellFormed("password", password);
    this.password = password.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * TLS to the endpoints (which must then be {@code https://}): the server's certificate is
   * checked against {@code trustCert} (PEM; null: the JDK's default trust store) and, for mutual
   * TLS, this client presents {@code clientCert} with {@code clientKey} (PEM, the key PKCS#8
   * unencrypted); both or neither.
   */
  /** Mutual TLS: as {@link #tls}, with a client certificate and key that must both be given. */
  void mutualTls(@Nullable Path trustCert, Path clientCert, Path clientKey) {
    java.util.Objects.requireNonNull(clientCert, "clientCertPem must not be null");
    java.util.Objects.requireNonNull(clientKey, "clientKeyPem must not be null");
    tls(trustCert, clientCert, clientKey);
  }

  void tls(@Nullable Path trustCert, @Nullable Path clientCert, @Nullable Path clientKey) {
    requireOwnClient("tls(...)");
    if ((clientCert == null) != (clientKey == null)) {
      throw new IllegalArgumentException("mutual TLS needs both a client certificate and its key;"
          + " got " + (clientCert == null ? "only the key " + clientKey : "only the certificate "
          + clientCert));
    }
    this.trustCert = readable("trust certificate", trustCert);
    this.clientCert = readable("client certificate", clientCert);
    this.clientKey = readable("client key", clientKey);
    this.tls = true;
  }

  private void requireOwnClient(String what) {
    if (client != null) {
      throw new IllegalStateException(what + " configures the client the builder builds for its"
          + " endpoints; configure credentials and TLS on your own jetcd Client instead, or use"
          + " builder(String... endpoints)");
    }
  }

  private static @Nullable Path readable(String what, @Nullable Path file) {
    if (file != null && !Files.isReadable(file)) {
      throw new IllegalArgumentException("the TLS " + what + " file " + file + " does not exist or"
          + " is not readable by this process");
    }
    return file;
  }

  /** The client to use (built now, with bounded calls, unless the caller gave one) and the rest. */
  Opened open() {
    KeyLayout layout = new KeyLayout(keyPrefix);
    if (client != null) {
      return new Opened(client, null, layout, callTimeout, Calls.CLIENT_ENDPOINTS, null);
    }
    boolean https = "https".equalsIgnoreCase(endpoints.get(0).getScheme());
    for (URI e : endpoints) {
      if ("https".equalsIgnoreCase(e.getScheme()) != https) {
        throw new IllegalArgumentException("etcd endpoints mix http:// and https:// ("
            + Calls.describe(endpoints) + "); use one scheme for all members");
      }
    }
    if (tls && !https) {
      throw new IllegalArgumentException("TLS is configured but the etcd endpoints are plaintext ("
          + Calls.describe(endpoints) + "); use https://host:port");
    }
    SslContext ssl = https ? sslContext() : null;
    ExecutorService threads = Calls.ownThreads();
    Client own;
    try {
      own = Calls.ownClient(endpoints, callTimeout, user, password, ssl, threads);
    } catch (RuntimeException e) {
      threads.shutdown();
      throw e;
    }
    return new Opened(own, threads, layout, callTimeout, Calls.describe(endpoints), user);
  }

  private SslContext sslContext() {
    try {
      SslContextBuilder b = GrpcSslContexts.forClient();
      if (trustCert != null) {
        b.trustManager(trustCert.toFile());
      }
      if (clientCert != null) {
        b.keyManager(clientCert.toFile(), clientKey.toFile());
      }
      return b.build();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("cannot load the TLS files (trust certificate "
          + (trustCert == null ? "the JDK default" : trustCert) + ", client certificate "
          + clientCert + ", client key " + clientKey + "): " + e.getMessage() + ". Give PEM files;"
          + " the key in unencrypted PKCS#8 (-----BEGIN PRIVATE KEY-----)", e);
    }
  }

  /**
   * @param threads the threads of a client built here (see {@link Calls#ownClient}); null for a
   *     caller's client
   * @param endpoints how messages name the endpoints
   * @param user the etcd user this client authenticates as; null if none or unknown (a caller's
   *     client)
   */
  record Opened(Client client, @Nullable ExecutorService threads, KeyLayout keys,
      Duration callTimeout, String endpoints, @Nullable String user) {

    /** Whether the client was built here (and is to be closed with its user). */
    boolean owned() {
      return threads != null;
    }

    /**
     * Closes a client built here, then lets its threads finish what is queued and end; does not
     * wait for them. Does nothing for a caller's client.
     */
    void closeOwned() {
      if (threads != null) {
        try {
          client.close();
        } finally {
          threads.shutdown();
        }
      }
    }
  }
}
