package dev.leases.cli;

import dev.leases.spi.SecretSetting;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Where the CLI takes a secret from ({@code --password-file}, else {@code $LEASES_PASSWORD}), and
 * how it keeps secrets out of what it prints: every message goes through {@link #redact}.
 */
final class Secrets {

  static final String ENV_VAR = "LEASES_PASSWORD";

  private static final Pattern USER_INFO = Pattern.compile("(://[^/:@\\s]*):[^@/\\s]*@");
  private static final Pattern QUERY_PASSWORD =
      Pattern.compile("(?i)((?:password|pass|pwd)=)[^&\\s]*");

  private final @Nullable String secret; // null when none was given

  private Secrets(@Nullable String secret) {
    this.secret = secret;
  }

  /**
   * The secret from {@code file} if given (one trailing line break removed), else from
   * {@link #ENV_VAR}, else none.
   */
  static Secrets from(@Nullable Path file, Map<String, String> env) {
    if (file != null) {
      try {
        return new Secrets(SecretSetting.readFile("--password-file", "password file", file));
      } catch (IllegalArgumentException e) { // names the option and file, never the content
        throw new CliException(ExitCodes.USAGE, e.getMessage() + "; pass a readable file with the"
            + " password on its first line, or set " + ENV_VAR + " instead");
      }
    }
    String fromEnv = env.get(ENV_VAR);
    return new Secrets(fromEnv == null || fromEnv.isEmpty() ? null : fromEnv);
  }

  /** The secret, or null. */
  @Nullable String value() {
    return secret;
  }

  /**
   * {@code text} with the secret, the password of any {@code scheme://user:password@} and any
   * {@code password=} query parameter replaced by {@code ****}.
   */
  @Nullable String redact(@Nullable String text) {
    if (text == null) {
      return null;
    }
    String out = text;
    if (secret != null) {
      out = out.replace(secret, "****");
    }
    out = USER_INFO.matcher(out).replaceAll("$1:****@");
    return QUERY_PASSWORD.matcher(out).replaceAll("$1****");
  }
}
