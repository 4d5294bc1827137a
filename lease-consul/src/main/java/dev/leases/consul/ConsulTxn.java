package dev.leases.consul;

import dev.leases.LeaseStoreUnavailableException;
import java.util.Optional;
import org.kiwiproject.consul.ConsulException;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.model.kv.Operation;
import org.kiwiproject.consul.model.kv.TxResponse;

/** One Consul KV transaction ({@code PUT /v1/txn}), all of its operations or none. */
final class ConsulTxn {

  private ConsulTxn() {}

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
    ConsulCalls.ensureLive(); // an abandoned call writes nothing more
    try {
      TxResponse response = kv.performTransaction(ops).getResponse();
      if (response == null) {
        throw new LeaseStoreUnavailableException("Consul answered a transaction without a body;"
            + " its outcome is unknown", null);
      }
      return Optional.of(response);
    } catch (ConsulException e) {
      if (e.getCode() == 409 && !String.valueOf(e.getMessage()).contains("Permission denied")) {
        return Optional.empty();
      }
      throw e;
    }
  }
}
