package dev.leases.redis;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import dev.leases.spi.SecretSetting;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * Opens a {@link RedisLeaseStore} that owns its client, from string settings:
 * <ul>
 *   <li>{@code uri} (required) — e.g. {@code redis://127.0.0.1:6379}, {@code rediss://} for TLS
 *   <li>{@code keyPrefix} (optional) — default {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}
 *   <li>{@code commandTimeoutMs} (optional) — default 2000
 *   <li>{@code user} (optional) — the ACL user; its password from exactly one of
 *       {@code passwordFile} (a file holding it, one trailing line break dropped, read again for
 *       every new connection so that a rotated password is picked up) or {@code passwordEnv} (the
 *       name of an environment variable holding it, read once when the store is opened). A
 *       password without {@code user} is the {@code default} user's ({@code requirepass}). There is
 *       no inline password setting (settings maps get printed), and a password in {@code uri} is
 *       refused together with either.
 *   <li>{@code trustCertFile} (optional) — PEM file of the authority that signed the server's
 *       certificate (else the JDK's default trust store, for {@code rediss://});
 *       {@code clientCertFile} and {@code clientKeyFile} (optional, together) — PEM client
 *       certificate and unencrypted PKCS#8 key for mutual TLS. See
 *       {@link RedisLeaseStore.Builder#tls}.
 * </ul>
 * Unknown settings are rejected, so that a typo does not silently fall back to a default. Messages
 * name settings, files and variables, never a password.
 */
public final class RedisLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: the Redis URI, e.g. {@code redis://host:6379/0} (required). */
  public static final String URI = "uri";
  /** Setting: the key prefix (default {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}). */
  public static final String KEY_PREFIX = "keyPrefix";
  /** Setting: the command timeout in milliseconds (default 2000). */
  public static final String COMMAND_TIMEOUT_MS = "commandTimeoutMs";
  /** Setting: the ACL user. */
  public static final String USER = "user";
  /** Setting: a file holding the password, read for every new connection. */
  public static final String PASSWORD_FILE = "passwordFile";
  /** Setting: an environment variable holding the password. */
  public static final String PASSWORD_ENV = "passwordEnv";
  /** Setting: PEM file of the authority that signed the server's certificate. */
  public static final String TRUST_CERT_FILE = "trustCertFile";
  /** Setting: PEM client certificate, for mutual TLS. */
  public static final String CLIENT_CERT_FILE = "clientCertFile";
  /** Setting: unencrypted PKCS#8 PEM client key, for mutual TLS. */
  public static final String CLIENT_KEY_FILE = "clientKeyFile";

  private static final Set<String> KNOWN = Set.of(URI, KEY_PREFIX, COMMAND_TIMEOUT_MS, USER,
      PASSWORD_FILE, PASSWORD_ENV, TRUST_CERT_FILE, CLIENT_CERT_FILE, CLIENT_KEY_FILE);

  private final UnaryOperator<@Nullable String> environment;

  /** A factory; it keeps no state. */
  public RedisLeaseStoreFactory() {
    this(System::getenv);
  }

  /** A factory that reads {@code passwordEnv} variables through {@code environment}. */
  RedisLeaseStoreFactory(UnaryOperator<@Nullable String> environment) {
    this.environment = Objects.requireNonNull(environment, "environment must not be null");
  }

  @Override
  public LeaseStore open(Map<String, String> settings) {
    return builder(settings, "the Redis store", environment).build();
  }

  /** A store builder from these settings, refusing unknown ones; {@code who} names the reader. */
  static RedisLeaseStore.Builder builder(Map<String, String> settings, String who,
      UnaryOperator<@Nullable String> environment) {
    for (String key : settings.keySet()) {
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting '" + key + "'; " + who + " knows "
            + new TreeSet<>(KNOWN));
      }
    }
    RedisLeaseStore.Builder b = RedisLeaseStore.builder(LeaseStoreFactory.require(settings, URI));
    String prefix = settings.get(KEY_PREFIX);
    if (prefix != null) {
      b.keyPrefix(prefix);
    }
    String timeout = settings.get(COMMAND_TIMEOUT_MS);
    if (timeout != null) {
      try {
        b.commandTimeout(Duration.ofMillis(Long.parseLong(timeout.trim())));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("setting '" + COMMAND_TIMEOUT_MS + "' must be a whole"
            + " number of milliseconds, was '" + timeout + "'", e);
      }
    }
    credentials(b, settings, environment);
    String trust = settings.get(TRUST_CERT_FILE);
    String cert = settings.get(CLIENT_CERT_FILE);
    String key = settings.get(CLIENT_KEY_FILE);
    if (trust != null || cert != null || key != null) {
      b.tls(path(trust), path(cert), path(key));
    }
    return b;
  }

  private static void credentials(RedisLeaseStore.Builder b, Map<String, String> settings,
      UnaryOperator<@Nullable String> environment) {
    String given = SecretSetting.requireAtMostOne(settings, "the Redis password", PASSWORD_FILE,
        PASSWORD_ENV);
    String user = settings.get(USER);
    if (given == null) {
      if (user != null) {
        throw new IllegalArgumentException("setting '" + USER + "' needs the password from '"
            + PASSWORD_FILE + "' or '" + PASSWORD_ENV + "'");
      }
      return;
    }
    if (b.uriHasPassword()) {
      throw new IllegalArgumentException("setting '" + URI + "' carries a password, and '"
          + given + "' gives another: give the password one way (prefer '"
          + PASSWORD_FILE + "' and a URI without user:password@)");
    }
    String name = user == null ? "default" : user.trim();
    if (given.equals(PASSWORD_ENV)) {
      b.user(name, SecretSetting.fromEnvironment(PASSWORD_ENV, settings.get(PASSWORD_ENV),
          environment));
    } else {
      b.credentials(name, SecretSetting.rereadingFile(PASSWORD_FILE, "Redis password file",
          Path.of(settings.get(PASSWORD_FILE).trim())));
    }
  }

  private static Path path(String file) {
    return file == null ? null : Path.of(file.trim());
  }
}
