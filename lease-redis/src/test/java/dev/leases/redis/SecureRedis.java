package dev.leases.redis;

import dev.leases.tck.servers.TestCertificates;
import dev.leases.testing.Secrets;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The secured Redis server of the tests, one per test JVM: the local {@code redis-server} with TLS
 * only ({@code --port 0 --tls-port}, certificates from {@link TestCertificates},
 * {@code --tls-auth-clients yes}: clients need a certificate of {@link #certs}' authority) and ACL
 * users kept in an ACL file, so that they survive {@link #restart()} (the data does not: no
 * persistence). The {@code default} user has a random password and every permission: it is the
 * administrator, and a client without credentials gets {@code NOAUTH}.
 */
final class SecureRedis {

  private static SecureRedis shared;

  final TestCertificates certs;
  final String adminPassword;
  private final RedisProcess process;
  private RedisClient adminClient;
  private StatefulRedisConnection<String, String> admin;

  private SecureRedis(TestCertificates certs, String adminPassword, RedisProcess process) {
    this.certs = certs;
    this.adminPassword = adminPassword;
    this.process = process;
  }

  static synchronized SecureRedis shared() throws Exception {
    if (shared == null) {
      TestCertificates certs = TestCertificates.create("leases-redis-tls-");
      String adminPassword = random("admin-");
      RedisProcess p = RedisProcess.start((port, dir) -> {
        Path acl = dir.resolve("users.acl");
        Files.writeString(acl, "user default on >" + adminPassword + " ~* &* +@all\n",
            StandardCharsets.UTF_8);
        return List.of("--port", "0", "--tls-port", Integer.toString(port),
            "--tls-cert-file", certs.serverCert().toString(),
            "--tls-key-file", certs.serverKey().toString(),
            "--tls-ca-cert-file", certs.ca().toString(), "--tls-auth-clients", "yes",
            "--aclfile", acl.toString());
      });
      SecureRedis s = new SecureRedis(certs, adminPassword, p);
      Runtime.getRuntime().addShutdownHook(new Thread(p::close, "secure-redis-stop"));
      shared = s;
    }
    return shared;
  }

  /** {@code rediss://127.0.0.1:PORT}, no credentials. */
  String uri() {
    return uri(process.port());
  }

  static String uri(int port) {
    return "rediss://127.0.0.1:" + port;
  }

  int port() {
    return process.port();
  }

  /** A builder over TLS with the client certificate; add credentials. */
  RedisLeaseStore.Builder builder(String uri) {
    return RedisLeaseStore.builder(uri).tls(certs.ca(), certs.clientCert(), certs.clientKey());
  }

  /** The default user's connection (every permission), over TLS. */
  synchronized StatefulRedisConnection<String, String> admin() {
    if (admin == null) {
      adminClient = client("default", adminPassword);
      admin = adminClient.connect();
      admin.setTimeout(Duration.ofSeconds(10));
    }
    return admin;
  }

  /** A Lettuce client of {@code user} over TLS with the client certificate; close it. */
  RedisClient client(String user, String password) {
    RedisURI u = RedisURI.builder(RedisURI.create(uri())).withAuthentication(user, password)
        .withTimeout(Duration.ofSeconds(10)).build();
    RedisClient c = RedisClient.create(u);
    c.setOptions(ClientOptions.builder().sslOptions(SslOptions.builder()
        .jdkSslProvider().trustManager(certs.ca().toFile())
        .keyManager(certs.clientCert().toFile(), certs.clientKey().toFile(), null).build())
        .build());
    return c;
  }

  /**
   * Gives {@code user} the {@code access} rules on {@code prefix} through {@link RedisAcl#apply},
   * sets its password, and saves the ACL file so that the user survives a restart.
   */
  void addUser(String user, String password, String prefix, RedisAcl.Access access) {
    RedisAcl.apply(admin(), user, prefix, access, Duration.ofSeconds(10));
    setPassword(user, password);
  }

  /** Enables {@code user} with {@code password} as its only password, and saves the ACL file. */
  void setPassword(String user, String password) {
    admin().sync().aclSetuser(user, io.lettuce.core.AclSetuserArgs.Builder.on().resetpass()
        .addPassword(password));
    admin().sync().aclSave();
  }

  /** A crash and a start on the same port: the data is gone, the ACL file stays. */
  void restart() throws Exception {
    process.kill();
    process.startAgain();
  }

  /** A 0600 file holding {@code content}, deleted at JVM exit. */
  static Path secretFile(String content) throws Exception {
    return Secrets.file(content);
  }

  static String random(String prefix) {
    return Secrets.random(prefix);
  }
}
