package dev.leases.consul;

import dev.leases.LeaseException;

/**
 * Consul refused a call because of its ACL token, not because of the lease: the token lacks a
 * permission the call needs ({@code 403 Permission denied}, also inside a transaction), Consul does
 * not know the token ({@code ACL not found}: wrong, deleted or expired), or no token was sent where
 * anonymous requests are denied. The message names the call, the key or rule Consul checked, and
 * what to grant (see {@link ConsulPolicies}); never the token itself. Retrying does not help until
 * an operator changes the token or its policies; the refused request changed nothing. Never a
 * {@link dev.leases.LeaseStoreUnavailableException} (Consul answered) and never "held by another".
 */
public class ConsulAccessDeniedException extends LeaseException {
  ConsulAccessDeniedException(String message, Throwable cause) {
    super(message, cause);
  }

  ConsulAccessDeniedException(String message) {
    super(message);
  }
}
