package dev.leases.redis;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Tells Redis's refusals of a caller (ACL, credentials) from other failures, and words them. Redis
 * error texts never carry a password; neither do these messages.
 */
final class Refusals {

  private static final String IN_SCRIPT = "The user executing the script can't";

  private Refusals() {}

  /**
   * A {@link RedisAccessDeniedException} if {@code failure} or one of its causes is a refusal of
   * the caller, else null.
   *
   * @param user names the caller, e.g. {@code Redis user 'app'}
   * @param grant says what to grant, e.g. the {@code ACL SETUSER} command of {@link RedisAcl}
   * @param script the script that was refused, or null for a plain command or a connection
   */
  static RedisAccessDeniedException denied(Throwable failure, String user, String grant,
      String script) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      String m = t.getMessage();
      if (m == null) {
        continue;
      }
      String in = script == null ? "" : " (script '" + script + "')";
      if (m.startsWith(LuaScript.DENIED + " ")) {
        String[] parts = m.split(" ", 3); // code, command, key or channel
        return new RedisAccessDeniedException(user + " may not run " + parts[1] + " on '"
            + (parts.length > 2 ? parts[2] : "?") + "': its ACL refuses it" + in + ", checked"
            + " before anything was changed. " + grant, t);
      }
      if (m.startsWith("NOPERM") || m.contains(IN_SCRIPT)) {
        return new RedisAccessDeniedException(user + " was refused by its ACL" + in + ": "
            + firstSentence(m) + ". " + grant, t);
      }
      if (m.startsWith("WRONGPASS")) {
        return new RedisAccessDeniedException("Redis rejected the credentials (WRONGPASS: a"
            + " wrong password, no such user, or the user is off) of " + user + ". Check the user"
            + " name and the password source (passwordFile or passwordEnv); an administrator"
            + " creates the user with ACL SETUSER <user> on >password and RedisAcl's rules", t);
      }
      if (m.startsWith("NOAUTH")) {
        return new RedisAccessDeniedException("Redis requires authentication and " + user
            + " gave no password (NOAUTH). Set the user and its password: builder user(...),"
            + " or the settings user and passwordFile or passwordEnv", t);
      }
    }
    return null;
  }

  /** Redis's text up to its first period or line break: the rest repeats the script's sha. */
  private static String firstSentence(String m) {
    int end = m.length();
    for (String stop : new String[] {" script: ", "\n"}) {
      int i = m.indexOf(stop);
      if (i >= 0 && i < end) {
        end = i;
      }
    }
    String s = m.substring(0, end).trim();
    return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
  }
}
