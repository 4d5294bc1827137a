package dev.leases.consul;

import dev.leases.tck.servers.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.kiwiproject.consul.Consul;

/**
 * The secured Consul server of the tests, one per test JVM, stopped at exit: a single server with a
 * data directory ({@link ConsulProcess#secureServer}) that serves only HTTPS with certificates the
 * test generates, demands client certificates ({@code verify_incoming}), and enforces ACLs with
 * {@code default_policy = "deny"}. Tokens are made with {@link ConsulPolicies}, through
 * {@link #admin()} (the management token over mutual TLS).
 */
final class SecureConsul {

  private static SecureConsul shared;

  final ConsulProcess server;
  final TestCertificates certs;
  final String managementToken;
  private final Consul admin;

  private SecureConsul(ConsulProcess server, TestCertificates certs, String managementToken) {
    this.server = server;
    this.certs = certs;
    this.managementToken = managementToken;
    ConsulTls.Context tls = new ConsulTls(certs.ca(), certs.clientCert(), certs.clientKey()).load();
    this.admin = Consul.builder().withUrl(server.url()).withPing(false)
        .withSslContext(tls.ssl()).withTrustManager(tls.trust())
        .withTokenAuth(managementToken).withReadTimeoutMillis(10_000).build();
  }

  static synchronized SecureConsul shared() throws Exception {
    if (shared == null) {
      TestCertificates certs = TestCertificates.create("leases-consul-tls-");
      String management = UUID.randomUUID().toString();
      ConsulProcess server = ConsulProcess.secureServer(certs, management, true);
      SecureConsul s = new SecureConsul(server, certs, management);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        s.admin.destroy();
        server.close();
      }, "secure-consul-stop"));
      shared = s;
    }
    return shared;
  }

  String url() {
    return server.url();
  }

  /** The management token's client, over mutual TLS. */
  Consul admin() {
    return admin;
  }

  /**
   * A fresh token with {@code access} on {@code prefix} only (its policy and token created through
   * {@link ConsulPolicies}); its SecretID.
   */
  String token(String prefix, ConsulPolicies.Access access) {
    String policy = random("leases-" + access.name().toLowerCase() + "-");
    ConsulPolicies.apply(admin, prefix, policy, access, Duration.ofSeconds(10));
    return ConsulPolicies.token(admin, UUID.randomUUID().toString(), policy, "test " + policy,
        Duration.ofSeconds(10));
  }

  /** A builder over mutual TLS with this server's CA and client certificate, and no token. */
  ConsulLeaseStore.Builder builder(String url) {
    return ConsulLeaseStore.builder(url).tls(certs.ca(), certs.clientCert(), certs.clientKey());
  }

  /** Factory settings over mutual TLS, with {@code extra} (a token source, a prefix...). */
  Map<String, String> settings(Map<String, String> extra) {
    java.util.Map<String, String> m = new java.util.HashMap<>(Map.of(
        ConsulLeaseStoreFactory.URL, url(),
        ConsulLeaseStoreFactory.TRUST_CERT_FILE, certs.ca().toString(),
        ConsulLeaseStoreFactory.CLIENT_CERT_FILE, certs.clientCert().toString(),
        ConsulLeaseStoreFactory.CLIENT_KEY_FILE, certs.clientKey().toString()));
    m.putAll(extra);
    return Map.copyOf(m);
  }

  /** A 0600 file holding {@code content}, deleted at JVM exit. */
  static Path secretFile(String content) {
    return dev.leases.testing.Secrets.file(content);
  }

  static String random(String prefix) {
    return dev.leases.testing.Secrets.random(prefix);
  }
}
