package dev.leases.etcd;

import dev.leases.LeaseException;

/**
 * etcd refused a call because of who is calling, not because of the lease: the user lacks a
 * permission on the keys the call reads or writes ({@code PERMISSION_DENIED}), its credentials were
 * rejected, or the cluster has authentication enabled and no credentials were given. The message
 * names the user, the call and the key range, and says what to grant (see {@link EtcdRoles}).
 * Retrying does not help until an administrator changes the grants or the credentials; the refused
 * request changed nothing. Never a {@link dev.leases.LeaseStoreUnavailableException} (etcd
 * answered) and never "held by another".
 */
public class EtcdAccessDeniedException extends LeaseException {
  EtcdAccessDeniedException(String message, Throwable cause) {
    super(message, cause);
  }
}
