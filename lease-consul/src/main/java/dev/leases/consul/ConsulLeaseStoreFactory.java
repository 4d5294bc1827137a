package dev.leases.consul;

import dev.leases.LeaseStore;
import dev.leases.LeaseStoreFactory;
import java.util.Map;
import java.util.Objects;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * Opens a {@link ConsulLeaseStore} that owns its Consul client, from string settings:
 * <ul>
 *   <li>{@code url} (required) — the agent's address, e.g. {@code http://127.0.0.1:8500}, or
 *       {@code https://consul.example:8501} for TLS
 *   <li>{@code keyPrefix} (optional) — default {@value ConsulLeaseStore#DEFAULT_KEY_PREFIX}
 *   <li>{@code callTimeoutMs} (optional) — default 2000
 *   <li>the ACL token (optional), from at most one of {@code aclTokenFile} (a file holding it; one
 *       trailing line break dropped; read at open and again whenever the file changes, see
 *       {@link ConsulLeaseStore.Builder#aclTokenFile}) or {@code aclTokenEnv} (the name of an
 *       environment variable holding it, read once at open). There is no inline token setting:
 *       settings maps get printed.
 *   <li>{@code trustCertFile} (optional) — PEM file of the authority that signed the agent's
 *       certificate (else the JDK's default trust store, for {@code https://});
 *       {@code clientCertFile} and {@code clientKeyFile} (optional, together) — PEM client
 *       certificate and unencrypted PKCS#8 key, for agents with {@code verify_incoming}. See
 *       {@link ConsulLeaseStore.Builder#tls}.
 * </ul>
 * Unknown settings are rejected, so that a typo does not silently fall back to a default. Messages
 * name settings, files and variables, never a token.
 */
public final class ConsulLeaseStoreFactory implements LeaseStoreFactory {

  /** Setting: the agent's URL (required). */
  public static final String URL = ClientOptions.URL;
  /** Setting: the key prefix. */
  public static final String KEY_PREFIX = ClientOptions.KEY_PREFIX;
  /** Setting: the call timeout in milliseconds. */
  public static final String CALL_TIMEOUT_MS = ClientOptions.CALL_TIMEOUT_MS;
  /** Setting: a file holding the ACL token. */
  public static final String ACL_TOKEN_FILE = ClientOptions.ACL_TOKEN_FILE;
  /** Setting: an environment variable holding the ACL token. */
  public static final String ACL_TOKEN_ENV = ClientOptions.ACL_TOKEN_ENV;
  /** Setting: PEM file of the authority that signed the agent's certificate. */
  public static final String TRUST_CERT_FILE = ClientOptions.TRUST_CERT_FILE;
  /** Setting: PEM client certificate, for agents with {@code verify_incoming}. */
  public static final String CLIENT_CERT_FILE = ClientOptions.CLIENT_CERT_FILE;
  /** Setting: unencrypted PKCS#8 PEM client key, for agents with {@code verify_incoming}. */
  public static final String CLIENT_KEY_FILE = ClientOptions.CLIENT_KEY_FILE;

  private final UnaryOperator<@Nullable String> environment;

  /** A factory; it keeps no state. */
  public ConsulLeaseStoreFactory() {
    this(System::getenv);
  }

  /** A factory that reads {@code aclTokenEnv} variables through {@code environment}. */
  ConsulLeaseStoreFactory(UnaryOperator<@Nullable String> environment) {
    this.environment = Objects.requireNonNull(environment, "environment must not be null");
  }

  @Override
  public LeaseStore open(Map<String, String> settings) {
    return new ConsulLeaseStore.Builder(ClientOptions.fromSettings(settings, "store", environment))
        .build();
  }
}
