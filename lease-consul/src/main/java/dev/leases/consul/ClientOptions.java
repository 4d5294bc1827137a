package dev.leases.consul;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreFactory;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.Consul;

/**
 * What the builders of {@link ConsulLeaseStore} and {@link ConsulRunLedger} share: where Consul is
 * (a URL, or the user's client), the key prefix, the call bound and the ACL token, each checked
 * when set; and their string settings, for the factories.
 */
final class ClientOptions {

  final @Nullable Consul client;
  final @Nullable String url;
  final String target;
  String keyPrefix = ConsulLeaseStore.DEFAULT_KEY_PREFIX;
  Duration callTimeout = ConsulLeaseStore.DEFAULT_CALL_TIMEOUT;
  int maxConcurrentCalls = ConsulCalls.DEFAULT_MAX_THREADS;
  @Nullable String aclToken;

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
    if (client != null) {
      throw new IllegalStateException("this " + what + " uses your Consul client: configure the"
          + " token on it (Consul.builder().withTokenAuth(...)), not here");
    }
    this.aclToken = OwnedClient.requireAclToken(aclToken);
  }

  /** The call pool these options ask for. */
  ConsulCalls calls() {
    return new ConsulCalls(callTimeout, target, maxConcurrentCalls);
  }

  // ---------------------------------------------------------------- string settings

  static final String URL = "url";
  static final String KEY_PREFIX = "keyPrefix";
  static final String CALL_TIMEOUT_MS = "callTimeoutMs";
  static final String ACL_TOKEN = "aclToken";
  private static final Set<String> KNOWN = Set.of(URL, KEY_PREFIX, CALL_TIMEOUT_MS, ACL_TOKEN);

  /**
   * Options from string settings: {@code url} (required), {@code keyPrefix}, {@code callTimeoutMs},
   * {@code aclToken}; any other setting is refused by name.
   *
   * @param what "store" or "run ledger", for the messages
   */
  static ClientOptions fromSettings(Map<String, String> settings, String what) {
    for (String key : settings.keySet()) {
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting '" + key + "'; the Consul " + what
            + " knows " + KNOWN);
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
    String token = settings.get(ACL_TOKEN);
    if (token != null) {
      o.aclToken(token, what);
    }
    return o;
  }
}
