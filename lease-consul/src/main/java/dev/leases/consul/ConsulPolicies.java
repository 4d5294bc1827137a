package dev.leases.consul;

import dev.leases.LeaseArguments;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.kiwiproject.consul.AclClient;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.ConsulException;
import org.kiwiproject.consul.model.acl.ImmutablePolicy;
import org.kiwiproject.consul.model.acl.ImmutablePolicyLink;
import org.kiwiproject.consul.model.acl.ImmutableToken;
import org.kiwiproject.consul.model.acl.PolicyResponse;
import org.kiwiproject.consul.model.acl.TokenResponse;

/**
 * The Consul ACL policies of this module's tokens, as HCL rules or created through an
 * administrator's client. Everything {@link ConsulLeaseStore} and {@link ConsulRunLedger} keep
 * lives under {@code <keyPrefix>/} (lease keys, run records under {@code <keyPrefix>/.once/}), and
 * the store's sessions are created, renewed, read and destroyed on the agent's node:
 *
 * <ul>
 *   <li>{@link Access#HOLDER}: {@code key_prefix "<keyPrefix>/"} {@code write} (locks, releases,
 *       transactions, blocking queries and run records) and {@code session_prefix ""} {@code write}
 *       (create, renew, read and destroy sessions on any agent's node; confine it to one node
 *       with {@link #rules(String, Access, String)} when every holder talks to a known agent);
 *   <li>{@link Access#OBSERVER}: the same resources at {@code read}: {@code inspect},
 *       {@code token}, {@code onRelease}, listing names ({@code names}, a {@code ?keys} read) and
 *       reading run records work; acquire, renew and release throw
 *       {@link ConsulAccessDeniedException}.
 * </ul>
 *
 * Servers with {@code acl.enable_key_list_policy = true} also check {@code list} on listings
 * ({@code ?keys}, recursive reads: {@code names} and the release watches of {@code onRelease});
 * {@code write} includes it, {@code read} does not, so there give an observer's
 * {@code key_prefix} rule {@code policy = "list"} (read and list) instead of these rules.
 *
 * A token confined to one prefix cannot read or write another prefix's leases. Consul's session
 * rules are per node, not per session: a holder's token may renew or destroy any session on the
 * nodes it covers if it learns the session's ID (a destroyed session loses its leases; fencing
 * tokens still reject the old holder's writes). A
 * {@link ConsulFence} writer needs, besides, {@code write} on the guarded resource keys, which lie
 * outside the prefix ({@link #fenceRules}); the fence reads them and writes them with
 * check-and-set, nothing else. Consul must run with {@code acl.enabled = true} and should have
 * {@code default_policy = "deny"}; the policy and token are an administrator's (a token with
 * {@code acl = "write"}, e.g. the management token).
 */
public final class ConsulPolicies {

  /** What a token may do under one prefix. */
  public enum Access {
    /** {@code write}: what a lease holder and a run ledger need. */
    HOLDER("write"),
    /** {@code read}: dashboards and operators. */
    OBSERVER("read");

    private final String policy;

    Access(String policy) {
      this.policy = policy;
    }
  }

  private static final int MAX_NAME_LENGTH = 128;

  private ConsulPolicies() {}

  /**
   * The HCL rules of {@code access} on {@code keyPrefix}, e.g. for prefix {@code myapp/leases} and
   * {@link Access#HOLDER}:
   * <pre>
   * key_prefix "myapp/leases/" {
   *   policy = "write"
   * }
   * session_prefix "" {
   *   policy = "write"
   * }
   * </pre>
   */
  public static String rules(String keyPrefix, Access access) {
    return rules(keyPrefix, access, null);
  }

  /**
   * As {@link #rules(String, Access)}, with the session rule confined to the agent node
   * {@code node} ({@code session "<node>"}): enough when every store of the token talks to that
   * agent (sessions are created on the node of the agent that receives the request); null for
   * any node ({@code session_prefix ""}).
   */
  public static String rules(String keyPrefix, Access access, String node) {
    String prefix = KeyLayout.requirePrefix(keyPrefix);
    Objects.requireNonNull(access, "access must not be null");
    String sessions = node == null ? "session_prefix \"\""
        : "session \"" + requireName("node", node) + "\"";
    return "key_prefix \"" + prefix + "/\" {\n  policy = \"" + access.policy + "\"\n}\n"
        + sessions + " {\n  policy = \"" + access.policy + "\"\n}\n";
  }

  /**
   * The HCL rules a {@link ConsulFence} writer needs for resource keys starting with
   * {@code resourceKeyPrefix} (a whole key also works): {@code key_prefix "<it>"} {@code write}.
   * Give them to the writer's token besides {@link #rules}.
   */
  public static String fenceRules(String resourceKeyPrefix) {
    LeaseArguments.requireText("resourceKeyPrefix", resourceKeyPrefix,
        ConsulFence.MAX_RESOURCE_KEY_LENGTH);
    if (resourceKeyPrefix.chars().anyMatch(c -> c == '"' || c == '\\' || c < 0x20)) {
      throw new IllegalArgumentException("resourceKeyPrefix must not contain quotes, backslashes"
          + " or control characters");
    }
    return "key_prefix \"" + resourceKeyPrefix + "\" {\n  policy = \"write\"\n}\n";
  }

  /**
   * Creates policy {@code policyName} with {@link #rules rules(keyPrefix, access)}, or sets its
   * rules to those if it exists; through {@code admin} (a client whose token has {@code acl = "write"});
   * idempotent. Bounded by {@code callTimeout}.
   *
   * @return the policy's ID
   * @throws ConsulAccessDeniedException if {@code admin}'s token may not manage ACLs
   * @throws dev.leases.LeaseStoreUnavailableException if Consul did not answer in time
   */
  public static String apply(Consul admin, String keyPrefix, String policyName, Access access,
      Duration callTimeout) {
    return applyRules(admin, policyName, rules(keyPrefix, access),
        "leases " + access.name().toLowerCase(java.util.Locale.ROOT) + " of '" + keyPrefix + "/'",
        callTimeout);
  }

  /** As {@link #apply}, with any rules (e.g. {@link #rules} plus {@link #fenceRules}). */
  public static String applyRules(Consul admin, String policyName, String rules,
      String description, Duration callTimeout) {
    String name = requireName("policy", policyName);
    Objects.requireNonNull(rules, "rules must not be null");
    AclClient acl = Objects.requireNonNull(admin, "admin must not be null").aclClient();
    ImmutablePolicy policy = ImmutablePolicy.builder().name(name).rules(rules)
        .description(String.valueOf(description)).build();
    return call(callTimeout, "create or update Consul ACL policy '" + name + "'", () -> {
      for (int attempt = 0; ; attempt++) {
        Optional<PolicyResponse> existing = readPolicy(acl, name);
        try {
          if (existing.isEmpty()) {
            return acl.createPolicy(policy).id();
          }
          // the client's policy answers leave the rules out: write them again, harmless
          acl.updatePolicy(existing.get().id(), policy);
          return existing.get().id();
        } catch (ConsulException e) {
          if (attempt > 0 || !String.valueOf(e.getMessage()).contains("already exists")) {
            throw e;
          }
          // created concurrently: read it again and update it
        }
      }
    });
  }

  /**
   * Makes sure a token with AccessorID {@code accessorId} (a UUID you choose, so that repeating
   * this is harmless) exists and is linked to policy {@code policyName}, creating it if needed;
   * returns its SecretID, the value holders send. Through {@code admin}; bounded by
   * {@code callTimeout}. Store the SecretID in the holders' token file; never log it.
   *
   * @throws ConsulAccessDeniedException if {@code admin}'s token may not manage ACLs
   */
  public static String token(Consul admin, String accessorId, String policyName,
      String description, Duration callTimeout) {
    String id = requireUuid(accessorId);
    String name = requireName("policy", policyName);
    AclClient acl = Objects.requireNonNull(admin, "admin must not be null").aclClient();
    ImmutablePolicyLink link = ImmutablePolicyLink.builder().name(name).build();
    return call(callTimeout, "create or update Consul ACL token " + id, () -> {
      Optional<TokenResponse> existing = readToken(acl, id);
      if (existing.isEmpty()) {
        return acl.createToken(ImmutableToken.builder().id(id).addPolicies(link)
            .description(String.valueOf(description)).build()).secretId();
      }
      TokenResponse t = existing.get();
      if (t.policies().stream().noneMatch(p -> name.equals(p.name().orElse(null)))) {
        acl.updateToken(id, ImmutableToken.builder().id(id).addAllPolicies(t.policies())
            .addPolicies(link).description(t.description()).build());
      }
      return t.secretId();
    });
  }

  private static Optional<PolicyResponse> readPolicy(AclClient acl, String name) {
    return unlessMissing(() -> acl.readPolicyByName(name));
  }

  private static Optional<TokenResponse> readToken(AclClient acl, String accessorId) {
    return unlessMissing(() -> acl.readToken(accessorId));
  }

  private static <T> Optional<T> unlessMissing(java.util.function.Supplier<T> read) {
    try {
      return Optional.of(read.get());
    } catch (ConsulException e) {
      if (notFound(e)) {
        return Optional.empty();
      }
      throw e;
    }
  }

  /**
   * Consul 1.22 answers a read of a missing policy with 404 "Requested policy does not exist", of
   * a missing token with 403 "token does not exist: ACL not found" (an unknown caller token is a
   * bare 403 "ACL not found").
   */
  private static boolean notFound(ConsulException e) {
    return e.getCode() == 404 || String.valueOf(e.getMessage()).contains("does not exist");
  }

  private static <T> T call(Duration callTimeout, String what,
      java.util.concurrent.Callable<T> work) {
    ConsulCalls calls = new ConsulCalls(LeaseArguments.requirePositive("callTimeout", callTimeout),
        "Consul", 1);
    try {
      return calls.run(what, work);
    } finally {
      calls.close();
    }
  }

  /**
   * The {@link ConsulAccessDeniedException} for Consul's refusal {@code e} of call {@code what},
   * or null if {@code e} is not an ACL refusal: names the call and what Consul checked, and says
   * what to grant (the holder rules of {@code keyPrefix}, when known). Never the token.
   */
  static ConsulAccessDeniedException denied(String what, String target, String keyPrefix,
      ConsulException e) {
    String msg = String.valueOf(e.getMessage());
    boolean unknownToken = msg.contains("ACL not found");
    if (!unknownToken && !msg.contains("Permission denied") && e.getCode() != 403) {
      return null;
    }
    String grant = keyPrefix == null
        ? "grant the token's policy write on the keys this call writes (a fenced resource key:"
            + " ConsulPolicies.fenceRules) and read on those it reads"
        : "a holder's token needs ConsulPolicies.rules(\"" + keyPrefix + "\", HOLDER): "
            + rules(keyPrefix, Access.HOLDER).replaceAll("\\s+", " ").trim()
            + "; an observer's token (OBSERVER: the same at read) is refused every write by"
            + " design";
    String said = "Consul said: " + reason(msg);
    if (unknownToken) {
      return new ConsulAccessDeniedException(what + ": " + target + " does not know the ACL token"
          + " this client sends (ACL not found): it is mistyped, deleted or expired. Check that"
          + " the token source (aclTokenFile, aclTokenEnv or aclToken) holds the token's SecretID,"
          + " not its AccessorID. " + said, e);
    }
    if (msg.contains("anonymous token")) {
      return new ConsulAccessDeniedException(what + ": " + target + " refused a request without"
          + " an ACL token (the anonymous token lacks the permission). Give the store a token"
          + " (aclTokenFile or aclTokenEnv; aclToken on the builder); " + grant + ". " + said, e);
    }
    if (msg.contains("'key:list'")) {
      grant = "this server sets acl.enable_key_list_policy, so a listing needs key_prefix \""
          + (keyPrefix == null ? "<keyPrefix>" : keyPrefix) + "/\" { policy = \"list\" }"
          + " (read and list) or write; " + grant;
    }
    return new ConsulAccessDeniedException(what + ": " + target + " refused the ACL token: it"
        + " lacks a permission this call needs; " + grant + ". " + said, e);
  }

  private static final java.util.regex.Pattern TXN_ERROR = java.util.regex.Pattern.compile(
      "\"What\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

  /**
   * Consul's reason: for a transaction, the first error's {@code What} (JSON unescaped), the
   * whole message otherwise.
   */
  private static String reason(String msg) {
    java.util.regex.Matcher m = TXN_ERROR.matcher(msg);
    while (m.find()) {
      String what = m.group(1).replaceAll("\\\\(.)", "$1");
      if (what.contains("Permission denied") || what.contains("ACL not found")) {
        return what;
      }
    }
    return msg;
  }

  private static String requireName(String what, String name) {
    LeaseArguments.requireText(what + " name", name, MAX_NAME_LENGTH);
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
          || c == '_' || c == '.' && what.equals("node"))) {
        throw new IllegalArgumentException(what + " name '" + name + "' has '" + c + "'; use"
            + " A-Z a-z 0-9 - _" + (what.equals("node") ? " ." : "")
            + " (e.g. \"myapp-leases-holder\")");
      }
    }
    return name;
  }

  private static String requireUuid(String accessorId) {
    Objects.requireNonNull(accessorId, "accessorId must not be null");
    try {
      java.util.UUID.fromString(accessorId);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("accessorId must be a UUID (Consul's AccessorID), was '"
          + accessorId + "'", e);
    }
    return accessorId;
  }
}
