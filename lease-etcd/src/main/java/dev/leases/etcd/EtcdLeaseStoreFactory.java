package dev.leases.etcd;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import dev.leases.spi.SecretSetting;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * Opens an {@link EtcdLeaseStore} from string settings (for child JVMs and benchmark workers):
 * <ul>
 *   <li>{@code endpoints} (required): comma-separated, e.g.
 *       {@code http://127.0.0.1:2379,http://127.0.0.1:22379}; {@code https://} for TLS
 *   <li>{@code keyPrefix} (optional, default {@value EtcdLeaseStore#DEFAULT_KEY_PREFIX})
 *   <li>{@code callTimeoutMs} (optional, default 5000)
 *   <li>{@code user} (optional): the etcd user, with its password from exactly one of
 *       {@code passwordFile} (a file holding it; one trailing line break is dropped) or
 *       {@code passwordEnv} (the name of an environment variable holding it), both read once when
 *       the store is opened. There is no inline password setting: settings maps get printed.
 *   <li>{@code trustCertFile} (optional): PEM file of the authority that signed the servers'
 *       certificates (else the JDK's default trust store, for {@code https://} endpoints);
 *       {@code clientCertFile} and {@code clientKeyFile} (optional, together): PEM client
 *       certificate and unencrypted PKCS#8 key for mutual TLS. See {@link EtcdLeaseStore.Builder#tls}.
 * </ul>
 * Unknown settings are refused by name. Messages name settings, files and variables, never a
 * password.
 */
public final class EtcdLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: comma-separated endpoints (required). */
  public static final String ENDPOINTS = "endpoints";
  /** Setting: the key prefix. */
  public static final String KEY_PREFIX = "keyPrefix";
  /** Setting: the call timeout in milliseconds. */
  public static final String CALL_TIMEOUT_MS = "callTimeoutMs";
  /** Setting: the etcd user. */
  public static final String USER = "user";
  /** Setting: a file holding the user's password. */
  public static final String PASSWORD_FILE = "passwordFile";
  /** Setting: an environment variable holding the user's password. */
  public static final String PASSWORD_ENV = "passwordEnv";
  /** Setting: PEM file of the authority that signed the servers' certificates. */
  public static final String TRUST_CERT_FILE = "trustCertFile";
  /** Setting: PEM client certificate, for mutual TLS. */
  public static final String CLIENT_CERT_FILE = "clientCertFile";
  /** Setting: unencrypted PKCS#8 PEM client key, for mutual TLS. */
  public static final String CLIENT_KEY_FILE = "clientKeyFile";

  private static final Set<String> KNOWN = Set.of(ENDPOINTS, KEY_PREFIX, CALL_TIMEOUT_MS, USER,
      PASSWORD_FILE, PASSWORD_ENV, TRUST_CERT_FILE, CLIENT_CERT_FILE, CLIENT_KEY_FILE);

  private final UnaryOperator<@Nullable String> environment;

  /** A factory; it keeps no state. */
  public EtcdLeaseStoreFactory() {
    this(System::getenv);
  }

  /** A factory that reads {@code passwordEnv} variables through {@code environment}. */
  EtcdLeaseStoreFactory(UnaryOperator<@Nullable String> environment) {
    this.environment = Objects.requireNonNull(environment, "environment must not be null");
  }

  @Override
  public LeaseStore open(Map<String, String> settings) {
    return EtcdLeaseStore.builder(Settings.parse(settings, "etcd store", environment))
        .build();
  }

  /** The settings every etcd factory of this module reads, parsed and checked. */
  static final class Settings {
    private Settings() {}

    /**
     * @param what names the settings in messages, e.g. {@code etcd store}
     * @throws IllegalArgumentException for an unknown setting (named), a missing
     *     {@code endpoints}, a {@code callTimeoutMs} that is not a whole number, a password given
     *     no way or two ways, or an unreadable file
     */
    static ClientSettings parse(Map<String, String> settings, String what,
        UnaryOperator<@Nullable String> environment) {
      Set<String> unknown = new TreeSet<>(settings.keySet());
      unknown.removeAll(KNOWN);
      if (!unknown.isEmpty()) {
        throw new IllegalArgumentException("unknown " + what + " settings " + unknown
            + "; known are " + new TreeSet<>(KNOWN));
      }
      List<String> endpoints = Arrays.stream(LeaseStoreFactory.require(settings, ENDPOINTS)
          .split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
      ClientSettings client = ClientSettings.of(endpoints.toArray(String[]::new));
      String timeout = settings.get(CALL_TIMEOUT_MS);
      if (timeout != null) {
        try {
          client.callTimeout(Duration.ofMillis(Long.parseLong(timeout.trim())));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("setting '" + CALL_TIMEOUT_MS + "' must be a whole"
              + " number of milliseconds, was '" + timeout + "'", e);
        }
      }
      if (settings.get(KEY_PREFIX) != null) {
        client.keyPrefix(settings.get(KEY_PREFIX));
      }
      String user = settings.get(USER);
      String password = password(settings, environment);
      if ((user == null) != (password == null)) {
        throw new IllegalArgumentException(user == null
            ? "a password is set ('" + PASSWORD_FILE + "' or '" + PASSWORD_ENV + "') but no '"
                + USER + "'; set the etcd user too"
            : "setting '" + USER + "' needs the password from '" + PASSWORD_FILE + "' or '"
                + PASSWORD_ENV + "'");
      }
      if (user != null) {
        client.user(user, password);
      }
      String trust = settings.get(TRUST_CERT_FILE);
      String cert = settings.get(CLIENT_CERT_FILE);
      String key = settings.get(CLIENT_KEY_FILE);
      if (trust != null || cert != null || key != null) {
        client.tls(path(trust), path(cert), path(key));
      }
      return client;
    }

    private static @Nullable Path path(@Nullable String file) {
      return file == null ? null : Path.of(file.trim());
    }

    /** The password from at most one source, or null if none is set. Never in a message. */
    private static @Nullable String password(Map<String, String> settings,
        UnaryOperator<@Nullable String> environment) {
      String given = SecretSetting.requireAtMostOne(settings, "the etcd password", PASSWORD_FILE,
          PASSWORD_ENV);
      if (given == null) {
        return null;
      }
      return given.equals(PASSWORD_ENV)
          ? SecretSetting.fromEnvironment(PASSWORD_ENV, settings.get(PASSWORD_ENV), environment)
          : SecretSetting.readFile(PASSWORD_FILE, "password file",
              Path.of(settings.get(PASSWORD_FILE).trim()));
    }
  }
}
