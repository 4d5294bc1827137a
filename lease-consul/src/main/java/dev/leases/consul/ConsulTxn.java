package dev.leases.consul;

import dev.leases.LeaseStoreUnavailableException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.ConsulException;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.model.kv.Operation;
import org.kiwiproject.consul.model.kv.TxResponse;

/** One Consul KV transaction ({@code PUT /v1/txn}), all of its operations or none. */
final class ConsulTxn {

  /**
   * Operations per transaction that a batch sends at most. Consul 1.22 refuses more than 128
   * ({@code maxTxnOps} in its {@code agent/txn_endpoint.go}, not configurable); older servers
   * refused more than 64, so batches stay within 64 to work with both.
   */
  static final int MAX_OPS = 64;

  private static final Pattern OP_INDEX = Pattern.compile("\"OpIndex\"\\s*:\\s*(\\d+)");

  private ConsulTxn() {}

  /**
   * The transaction's answer, or, when Consul rolled it back, the index of the operation that
   * failed (Consul stops at the first; -1 if its answer did not say).
   */
  record Outcome(@Nullable TxResponse response, int failedOp) {
    boolean committed() {
      return response != null;
    }
  }

  /** As {@link #perform}, saying which operation failed when Consul rolled the transaction back. */
  static Outcome attempt(KeyValueClient kv, Operation... ops) {
    ConsulCalls.ensureLive();
    try {
      TxResponse response = kv.performTransaction(ops).getResponse();
      if (response == null) {
        throw new LeaseStoreUnavailableException("Consul answered a transaction without a body;"
            + " its outcome is unknown", null);
      }
      return new Outcome(response, -1);
    } catch (ConsulException e) {
      String message = String.valueOf(e.getMessage());
      if (e.getCode() == 409 && !message.contains("Permission denied")) {
        Matcher m = OP_INDEX.matcher(message);
        return new Outcome(null, m.find() ? Integer.parseInt(m.group(1)) : -1);
      }
      throw e;
    }
  }

  /**
   * Runs {@code ops} as one transaction, unless the call running on this thread has been abandoned
   * ({@link ConsulCalls#ensureLive()}).
   *
   * @return Consul's answer, or empty when Consul rolled the transaction back because a guard
   *     failed ({@code cas}, {@code check-index}, {@code check-not-exists}, {@code check-session})
   *     or a lock is held by another session
   * @throws ConsulException for any other error, an ACL denial included (Consul reports it with
   *     the same 409 status, and it must not pass for a lost race)
   */
  static Optional<TxResponse> perform(KeyValueClient kv, Operation... ops) {
    return Optional.ofNullable(attempt(kv, ops).response()); // an abandoned call writes nothing
  }
}
