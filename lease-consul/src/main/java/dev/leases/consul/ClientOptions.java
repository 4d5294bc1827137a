package dev.leases.consul;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreFactory;
import dev.leases.spi.SecretSetting;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.Consul;

/**
 * What the builders of {@link ConsulLeaseStore} and {@link ConsulRunLedger} share: where Consul is
 * (a URL, or the user's client), the key prefix, the call bound, the ACL token and the TLS files,
 * each checked when set; and their string settings, for the factories. Nothing here prints a
 * token.
 */
final class ClientOptions {

  final @Nullable Consul client;
  final @Nullable String url;
  final String target;
  String keyPrefix = ConsulLeaseStore.DEFAULT_KEY_PREFIX;
  Duration callTimeout = ConsulLeaseStore.DEFAULT_CALL_TIMEOUT;
  int maxConcurrentCalls = ConsulCalls.DEFAULT_MAX_THREADS;
  @Nullable AclToken aclToken;
  @Nullable ConsulTls tls;

  private ClientOptions(@Nullable Consul client, @Nullable String url) {
    this.client = client;
    this.url = url;
    this.target = url != null ? "Consul at " + url : "Consul";
  }

  static ClientOptions forUrl(String url) {
    return new ClientOptions(null, OwnedClient.requireUrl(url));
  }

  static ClientOptions forClient(Consul client) {
    return new ClientOptions(Objects.requireNonNull(client, "client must not be null"), null);
  }

  void keyPrefix(String keyPrefix) {
    this.keyPrefix = KeyLayout.requirePrefix(keyPrefix);
  }

  void callTimeout(Duration callTimeout) {
    this.callTimeout = LeaseArguments.requireTimeout("callTimeout", callTimeout,
        ConsulLeaseStore.MAX_CALL_TIMEOUT);
  }

  void maxConcurrentCalls(int maxConcurrentCalls) {
    this.maxConcurrentCalls = ConsulCalls.requireMaxThreads(maxConcurrentCalls);
  }

  /** @param what "store" or "ledger", for the message */
  void aclToken(String aclToken, String what) {
    requireOwnClient("aclToken(...)", what);
    this.aclToken = AclToken.fixed(aclToken);
  }

  /** @param what "store" or "ledger", for the message */
  void aclTokenFile(Path file, String what) {
    requireOwnClient("aclTokenFile(...)", what);
    this.aclToken = AclToken.file(file);
  }

  /** @param what "store" or "ledger", for the message */
  void tls(Path trustCert, Path clientCert, Path clientKey, String what) {
    requireOwnClient("tls(...)", what);
    ConsulTls t = new ConsulTls(trustCert, clientCert, clientKey);
    if (!url.regionMatches(true, 0, "https:", 0, 6)) {
      throw new IllegalArgumentException("TLS is configured but the Consul URL " + url + " is"
          + " plaintext; use https://host:port (the agent's ports.https)");
    }
    this.tls = t;
  }

  private void requireOwnClient(String setting, String what) {
    if (client != null) {
      throw new IllegalStateException("this " + what + " uses your Consul client: configure the"
          + " token and TLS on it (Consul.builder().withTokenAuth(...), withSslContext(...)), not"
          + " with " + setting);
    }
  }

  /** The call pool these options ask for. */
  ConsulCalls calls() {
    return new ConsulCalls(callTimeout, target, maxConcurrentCalls, keyPrefix, tlsRefusal());
  }

  /** For an https:// URL, asks the agent whether TLS refuses this client; else null. */
  private ConsulCalls.@Nullable TlsRefusal tlsRefusal() {
    if (url == null || !url.regionMatches(true, 0, "https:", 0, 6)) {
      return null;
    }
    URI u = URI.create(url);
    ConsulTls t = tls;
    return bound -> {
      try {
        return ConsulTls.refusal(u, t == null ? null : t.load().ssl(), bound);
      } catch (RuntimeException unreadableSinceBuilt) {
        return null;
      }
    };
  }

  /** The client these options describe, built now (only for options made from a URL). */
  OwnedClient open() {
    return OwnedClient.open(url, callTimeout, maxConcurrentCalls, aclToken, tls);
  }

  // ---------------------------------------------------------------- string settings

  static final String URL = "url";
  static final String KEY_PREFIX = "keyPrefix";
  static final String CALL_TIMEOUT_MS = "callTimeoutMs";
  static final String ACL_TOKEN_FILE = "aclTokenFile";
  static final String ACL_TOKEN_ENV = "aclTokenEnv";
  static final String TRUST_CERT_FILE = "trustCertFile";
  static final String CLIENT_CERT_FILE = "clientCertFile";
  static final String CLIENT_KEY_FILE = "clientKeyFile";
  private static final Set<String> KNOWN = Set.of(URL, KEY_PREFIX, CALL_TIMEOUT_MS, ACL_TOKEN_FILE,
      ACL_TOKEN_ENV, TRUST_CERT_FILE, CLIENT_CERT_FILE, CLIENT_KEY_FILE);

  /**
   * Options from string settings (see {@link ConsulLeaseStoreFactory}); any other setting is
   * refused by name. There is no inline token setting: settings maps get printed.
   *
   * @param what "store" or "run ledger", for the messages
   * @param environment reads the variable that {@code aclTokenEnv} names
   */
  static ClientOptions fromSettings(Map<String, String> settings, String what,
      UnaryOperator<@Nullable String> environment) {
    for (String key : settings.keySet()) {
      if (key.equals("aclToken")) {
        throw new IllegalArgumentException("there is no inline 'aclToken' setting (settings get"
            + " printed); give the token through '" + ACL_TOKEN_FILE + "' (a file holding it) or '"
            + ACL_TOKEN_ENV + "' (the name of an environment variable holding it)");
      }
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting '" + key + "'; the Consul " + what
            + " knows " + new TreeSet<>(KNOWN));
      }
    }
    ClientOptions o = forUrl(LeaseStoreFactory.require(settings, URL));
    String prefix = settings.get(KEY_PREFIX);
    if (prefix != null) {
      o.keyPrefix(prefix);
    }
    String timeout = settings.get(CALL_TIMEOUT_MS);
    if (timeout != null) {
      try {
        o.callTimeout(Duration.ofMillis(Long.parseLong(timeout.trim())));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MS + "' must be a whole"
            + " number of milliseconds, was '" + timeout + "'", e);
      }
    }
    String given = SecretSetting.requireAtMostOne(settings, "the ACL token", ACL_TOKEN_FILE,
        ACL_TOKEN_ENV);
    if (ACL_TOKEN_FILE.equals(given)) {
      o.aclTokenFile(Path.of(settings.get(ACL_TOKEN_FILE).trim()), what);
    } else if (ACL_TOKEN_ENV.equals(given)) {
      String variable = settings.get(ACL_TOKEN_ENV).trim();
      o.aclToken = AclToken.fixed(AclToken.requireToken(
          SecretSetting.fromEnvironment(ACL_TOKEN_ENV, variable, environment),
          "the ACL token in environment variable " + variable));
    }
    String trust = settings.get(TRUST_CERT_FILE);
    String cert = settings.get(CLIENT_CERT_FILE);
    String key = settings.get(CLIENT_KEY_FILE);
    if (trust != null || cert != null || key != null) {
      o.tls(path(trust), path(cert), path(key), what);
    }
    return o;
  }

  private static Path path(String file) {
    return file == null ? null : Path.of(file.trim());
  }
}
