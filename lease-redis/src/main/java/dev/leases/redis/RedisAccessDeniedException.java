package dev.leases.redis;

import dev.leases.LeaseException;

/**
 * Redis refused a call because of who is calling, not because of the lease: the user's ACL does
 * not allow a command, key or channel the call needs ({@code NOPERM}, or a script's access check),
 * the credentials were rejected ({@code WRONGPASS}: a wrong password, or no such user, or a
 * disabled one), or the server requires authentication and none was given ({@code NOAUTH}). The
 * message names the user, the command and key or channel, and what to grant (see
 * {@link RedisAcl}); it never contains a password.
 *
 * <p>Retrying does not help until an administrator changes the ACL or the credentials. A refused
 * write changed nothing in its script: every writing script checks the caller's permissions for
 * all it may write before writing anything. A batch of more names than one script takes (100)
 * goes as several scripts, all sent at once, so the others may have run: its outcome is unknown,
 * as for any exception of a batch. The checks assume one set of permissions ({@link RedisAcl}'s
 * rules); under ACL selectors a write may still be refused after others of its script. Never a
 * {@link dev.leases.LeaseStoreUnavailableException} (Redis answered) and never "held by another" or "not granted".
 */
public class RedisAccessDeniedException extends LeaseException {
  RedisAccessDeniedException(String message, Throwable cause) {
    super(message, cause);
  }
}
