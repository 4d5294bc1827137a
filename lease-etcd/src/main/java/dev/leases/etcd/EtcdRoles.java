package dev.leases.etcd;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import io.etcd.jetcd.Auth;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The etcd RBAC grants of this module's users, as {@code etcdctl} commands or applied through an
 * administrator's jetcd client. Everything {@link EtcdLeaseStore}, {@link EtcdRunLedger} and
 * {@link EtcdFence} keep lives under {@code <keyPrefix>/} (lease keys, companion keys, fences, run
 * records), so one key range, {@code [<keyPrefix>/, <keyPrefix>0)} ({@code etcdctl --prefix}),
 * covers them:
 *
 * <ul>
 *   <li>{@link Access#HOLDER}: {@code readwrite} on the range — acquire, renew, release, inspect,
 *       token, {@code onRelease}, run records and fence keys. etcd's lease calls need no more:
 *       {@code LeaseGrant} and {@code LeaseKeepAlive} are not checked, {@code LeaseRevoke} needs
 *       write on every key attached to the lease, {@code LeaseTimeToLive} read on them (since etcd
 *       3.4.26/3.5.9). An {@link EtcdFence} writer needs, besides, {@code write} on the guarded
 *       resource keys, which lie outside the range.
 *   <li>{@link Access#OBSERVER}: {@code read} on the range — {@code inspect}, {@code token},
 *       {@code onRelease}, listing names ({@code names}) and reading run records work; acquire and release throw
 *       {@link EtcdAccessDeniedException}. (etcd does not check keep-alives, so an observer that
 *       knows a holder's id and etcd lease can extend that lease; it cannot create or take one.)
 * </ul>
 *
 * A user confined to one prefix cannot read or write another prefix's leases. The user names and
 * passwords are the administrator's: {@code etcdctl user add NAME} (prompts for the password),
 * then {@link #grantCommand} or {@link #grant}. Enabling authentication ({@code etcdctl auth
 * enable}) needs a {@code root} user first.
 */
public final class EtcdRoles {

  /** What a role may do on the key range of one prefix. */
  public enum Access {
    /** {@code readwrite}: what a lease holder, a run ledger and a fence need. */
    HOLDER(Permission.Type.READWRITE, "readwrite"),
    /** {@code read}: dashboards and operators. */
    OBSERVER(Permission.Type.READ, "read");

    private final Permission.Type type;
    private final String etcdctl;

    Access(Permission.Type type, String etcdctl) {
      this.type = type;
      this.etcdctl = etcdctl;
    }
  }

  private static final int MAX_NAME_LENGTH = 128;

  private EtcdRoles() {}

  /**
   * The {@code etcdctl} commands that create {@code role} with {@code access} on
   * {@code keyPrefix}'s key range, e.g. for prefix {@code myapp/leases}:
   * <pre>
   * etcdctl role add myapp-holder
   * etcdctl role grant-permission --prefix=true myapp-holder readwrite myapp/leases/
   * </pre>
   */
  public static List<String> roleCommands(String keyPrefix, String role, Access access) {
    String prefix = KeyLayout.requirePrefix(keyPrefix);
    String r = requireName("role", role);
    Objects.requireNonNull(access, "access must not be null");
    return List.of("etcdctl role add " + r,
        "etcdctl role grant-permission --prefix=true " + r + " " + access.etcdctl + " " + prefix
            + "/");
  }

  /** {@code etcdctl user grant-role USER ROLE}. */
  public static String grantCommand(String user, String role) {
    return "etcdctl user grant-role " + requireName("user", user) + " " + requireName("role", role);
  }

  /**
   * Creates {@code role} if it does not exist and grants it {@code access} on {@code keyPrefix}'s
   * key range, through {@code admin} (a client of a user with the {@code root} role, or any client
   * while authentication is off); idempotent. Each call is bounded by {@code callTimeout}.
   *
   * @throws EtcdAccessDeniedException if {@code admin} may not manage roles
   * @throws LeaseStoreUnavailableException if etcd did not answer in time
   */
  public static void apply(Client admin, String keyPrefix, String role, Access access,
      Duration callTimeout) {
    String prefix = KeyLayout.requirePrefix(keyPrefix);
    ByteSequence r = utf8(requireName("role", role));
    Objects.requireNonNull(access, "access must not be null");
    Auth auth = Objects.requireNonNull(admin, "admin must not be null").getAuthClient();
    Calls calls = calls(callTimeout, prefix);
    try {
      refreshing(admin, calls, () -> auth.roleAdd(r), "add etcd role '" + role + "'");
    } catch (LeaseStoreUnavailableException e) {
      if (e.getMessage() == null || !e.getMessage().contains("role name already exists")) {
        throw e;
      }
    }
    refreshing(admin, calls, () -> auth.roleGrantPermission(r, utf8(prefix + "/"),
        utf8(prefix + "0"), access.type), "grant role '" + role + "' " + access.etcdctl + " on '"
        + prefix + "/'");
  }

  /**
   * One bounded call of jetcd's auth client. That client keeps a token etcd dropped (after
   * {@code --auth-token-ttl} of idleness) and fails every call with "invalid auth token"; a KV
   * call makes jetcd drop it, so on that answer this sends a one-key read and repeats the call
   * once. Safe: the refused call changed nothing.
   */
  private static <T> T refreshing(Client admin, Calls calls,
      java.util.function.Supplier<java.util.concurrent.CompletableFuture<T>> call, String what) {
    Calls.Budget budget = calls.budget();
    try {
      return calls.once(call, budget, what);
    } catch (LeaseStoreUnavailableException e) {
      if (!Calls.staleToken(e)) {
        throw e;
      }
    }
    try {
      calls.once(() -> admin.getKVClient().get(utf8("\0")), budget,
          "read one key to renew the auth token");
    } catch (RuntimeException e) {
      // the read may be refused (no permission on that key); the token was dropped all the same
    }
    return calls.once(call, budget, what);
  }

  /** Grants {@code role} to the existing {@code user}, through {@code admin}; idempotent. */
  public static void grant(Client admin, String user, String role, Duration callTimeout) {
    ByteSequence u = utf8(requireName("user", user));
    ByteSequence r = utf8(requireName("role", role));
    Auth auth = Objects.requireNonNull(admin, "admin must not be null").getAuthClient();
    Calls calls = calls(callTimeout, null);
    refreshing(admin, calls, () -> auth.userGrantRole(u, r),
        "grant role '" + role + "' to etcd user '" + user + "'");
  }

  private static Calls calls(Duration callTimeout, @Nullable String prefix) {
    return new Calls(LeaseArguments.requirePositive("callTimeout", callTimeout), () -> false,
        Calls.CLIENT_ENDPOINTS, "EtcdRoles", null, prefix);
  }

  /** A user or role name that needs no quoting in a shell: {@code A-Z a-z 0-9 . _ - : @}. */
  private static String requireName(String what, String name) {
    LeaseArguments.requireText(what + " name", name, MAX_NAME_LENGTH);
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
          || ".-_:@".indexOf(c) >= 0)) {
        throw new IllegalArgumentException(what + " name '" + name + "' has '" + c + "'; use"
            + " A-Z a-z 0-9 . _ - : @ (e.g. \"myapp-holder\")");
      }
    }
    return name;
  }

  private static ByteSequence utf8(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
