package dev.leases.etcd;

import dev.leases.tck.servers.TestCertificates;
import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import dev.leases.testing.TestSecrets;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.grpc.netty.GrpcSslContexts;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The secured etcd servers of the tests: the local {@code etcd} binary (Debian's
 * {@code etcd-server}) on free loopback ports, one of each kind per test JVM, stopped at JVM exit.
 *
 * <ul>
 *   <li>{@link #withAuth()}: plaintext, authentication enabled (a {@code root} user with a random
 *       password), auth tokens that expire after {@value #AUTH_TOKEN_TTL_SECONDS} s of idleness
 *       (etcd's default is 300 s), so that the kit also proves that calls survive an expired token;
 *   <li>{@link #withMutualTls()}: {@code https://} with {@code --client-cert-auth}: only clients
 *       with a certificate of {@link #certs}' authority get in; no authentication.
 * </ul>
 *
 * Health is read from a plaintext metrics listener ({@code --listen-metrics-urls}).
 */
final class SecureEtcd {

  static final int AUTH_TOKEN_TTL_SECONDS = 2;

  private static SecureEtcd auth;
  private static SecureEtcd tls;

  final LocalProcessServer server;
  final String endpoint;
  /** Set for the TLS server. */
  final TestCertificates certs;
  /** The root user's password, for the auth server. */
  final String rootPassword;
  private final int metricsPort;
  private Client admin;

  private SecureEtcd(LocalProcessServer server, String endpoint, TestCertificates certs,
      String rootPassword, int metricsPort) {
    this.server = server;
    this.endpoint = endpoint;
    this.certs = certs;
    this.rootPassword = rootPassword;
    this.metricsPort = metricsPort;
  }

  static synchronized SecureEtcd withAuth() throws Exception {
    if (auth == null) {
      SecureEtcd s = start(null, List.of("--auth-token-ttl=" + AUTH_TOKEN_TTL_SECONDS));
      try (Client plain = Client.builder().endpoints(s.endpoint).build()) {
        var a = plain.getAuthClient();
        ByteSequence root = utf8("root");
        s.adminCall(() -> a.roleAdd(root));
        s.adminCall(() -> a.userAdd(root, utf8(s.rootPassword)));
        s.adminCall(() -> a.userGrantRole(root, root));
        s.adminCall(a::authEnable);
      }
      auth = s;
    }
    return auth;
  }

  static synchronized SecureEtcd withMutualTls() throws Exception {
    if (tls == null) {
      TestCertificates certs = TestCertificates.create("leases-etcd-tls-");
      tls = start(certs, List.of("--cert-file=" + certs.serverCert(), "--key-file=" + certs.serverKey(),
          "--trusted-ca-file=" + certs.ca(), "--client-cert-auth"));
    }
    return tls;
  }

  private static SecureEtcd start(TestCertificates certs, List<String> extra) throws Exception {
    Path binary = LocalProcessServer.findBinary("etcd").orElseThrow(
        () -> new AssertionError(EtcdServers.INSTALL_HINT));
    int peerPort = FreePorts.pick();
    int metricsPort = FreePorts.pick();
    String scheme = certs != null ? "https" : "http";
    LocalProcessServer server = LocalProcessServer.start("etcd",
        (port, dir) -> {
          List<String> argv = new ArrayList<>();
          for (String a : LocalServers.etcdArgv(binary, "leases-secure", dir.resolve("member"), port,
              peerPort, "leases-secure=http://127.0.0.1:" + peerPort, "leases-secure-" + port, 50,
              500)) {
            argv.add(a.startsWith("--listen-client-urls=") || a.startsWith("--advertise-client-urls=")
                ? a.replace("http://", scheme + "://") : a);
          }
          argv.add("--listen-metrics-urls=http://127.0.0.1:" + metricsPort);
          argv.addAll(extra);
          return argv;
        },
        port -> scheme + "://127.0.0.1:" + port, Duration.ofSeconds(30));
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "secure-etcd-stop"));
    SecureEtcd s = new SecureEtcd(server, server.endpoint(), certs, random("root-"), metricsPort);
    LocalServers.awaitEtcdHealthy(metricsPort, Duration.ofSeconds(30));
    return s;
  }

  /** A client with every right: root on the auth server, a trusted certificate on the TLS one. */
  synchronized Client admin() throws Exception {
    if (admin == null) {
      ClientBuilder b = Client.builder().endpoints(endpoint);
      if (certs != null) {
        b.sslContext(GrpcSslContexts.forClient().trustManager(certs.ca().toFile())
            .keyManager(certs.clientCert().toFile(), certs.clientKey().toFile()).build());
      } else {
        b.user(utf8("root")).password(utf8(rootPassword));
      }
      admin = b.build();
    }
    return admin;
  }

  /** Creates etcd user {@code name} with {@code password} and the given roles (root only). */
  void addUser(String name, String password, String... roles) throws Exception {
    var a = admin().getAuthClient();
    adminCall(() -> a.userAdd(utf8(name), utf8(password)));
    for (String r : roles) {
      adminCall(() -> a.userGrantRole(utf8(name), utf8(r)));
    }
  }

  /**
   * Awaits an administrator's call of the auth client, repeating it once when etcd refused it for
   * an expired auth token (tokens here expire after {@value #AUTH_TOKEN_TTL_SECONDS} s): jetcd's
   * auth client neither repeats calls nor drops a stale token; a KV call does (as
   * {@link EtcdRoles#apply} does).
   */
  <T> T adminCall(java.util.function.Supplier<java.util.concurrent.CompletableFuture<T>> call)
      throws Exception {
    try {
      return call.get().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (!Calls.staleToken(e.getCause()) || admin == null) {
        throw e;
      }
      admin.getKVClient().get(utf8("\0")).get(30, TimeUnit.SECONDS);
      return call.get().get(30, TimeUnit.SECONDS);
    }
  }

  /** As {@link EtcdServers#restartShared()}: SIGKILL, same ports and data, back when healthy. */
  void restart() throws Exception {
    server.restart(Duration.ofSeconds(30));
    LocalServers.awaitEtcdHealthy(metricsPort, Duration.ofSeconds(30));
  }

  int port() {
    return server.port();
  }

  /** A 0600 file holding {@code content}, deleted at JVM exit. */
  static Path secretFile(String content) throws Exception {
    return TestSecrets.file(content);
  }

  static String random(String prefix) {
    return TestSecrets.random(prefix);
  }

  static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
