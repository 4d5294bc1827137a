package dev.leases.spi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * Reading a secret (a password, a token) that string settings point to, the same way in every
 * backend: a file setting ({@code passwordFile}) names a file holding it, an environment setting
 * ({@code passwordEnv}) names an environment variable holding it, and at most one of them is set.
 * A secret is never inline in the settings, because settings maps get printed.
 *
 * <p>Every message names the setting, the variable or the file, never the secret: a failure to
 * read a file reports the exception's class only, since a decoding error's message could quote the
 * content. The methods keep no state; a store that re-reads a file on its own schedule calls
 * {@link #readFile} each time.
 */
public final class SecretSetting {

  private SecretSetting() {}

  /**
   * The one of {@code keys} that {@code settings} has, or null if it has none of them.
   *
   * @param secret names the secret in the message, e.g. {@code "the etcd password"}
   * @throws IllegalArgumentException if {@code settings} has more than one of {@code keys},
   *     naming those it has
   */
  public static @Nullable String requireAtMostOne(Map<String, String> settings, String secret,
      String... keys) {
    List<String> given = new ArrayList<>();
    for (String key : keys) {
      if (settings.get(key) != null) {
        given.add(key);
      }
    }
    if (given.size() > 1) {
      throw new IllegalArgumentException("give " + secret + " one way, not " + given
          + ": keep one of these settings (a file can be rotated without a restart)");
    }
    return given.isEmpty() ? null : given.get(0);
  }

  /**
   * The value of the environment variable {@code variable} (surrounding white space trimmed from
   * the name), read now through {@code environment} ({@code System::getenv}, or a map in tests).
   *
   * @param setting the setting that named the variable, for the message
   * @throws IllegalArgumentException if the variable is not set or is empty, naming the setting
   *     and the variable
   */
  public static String fromEnvironment(String setting, String variable,
      UnaryOperator<@Nullable String> environment) {
    String name = variable.trim();
    String value = environment.apply(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("setting '" + setting + "' names the environment"
          + " variable " + name + ", which is not set or empty");
    }
    return value;
  }

  /**
   * The secret in {@code file}, read now: its UTF-8 content without one trailing line break
   * ({@code \n} or {@code \r\n}).
   *
   * @param setting the setting (or builder parameter) that named the file, for the message; null
   *     to name the file only
   * @param what what the file holds, for the message, e.g. {@code "password file"}
   * @throws IllegalArgumentException if the file cannot be read or the secret is empty, naming
   *     the setting and the file
   */
  public static String readFile(@Nullable String setting, String what, Path file) {
    return read(setting, what, file, true);
  }

  /**
   * A supplier of the secret in {@code file} that reads the file again on every call, so that a
   * rotated secret (a mounted Kubernetes or Vault file) is used from the next call on; for a
   * client that asks for credentials once per new connection. The file is read once now, so that
   * a missing file is refused up front.
   *
   * @throws IllegalArgumentException now, as {@link #readFile} does; the supplier throws
   *     {@link IllegalStateException} with the same message when a later read fails
   */
  public static Supplier<String> rereadingFile(@Nullable String setting, String what, Path file) {
    Objects.requireNonNull(file, what + " must not be null");
    readFile(setting, what, file);
    return () -> read(setting, what, file, false);
  }

  private static String read(@Nullable String setting, String what, Path file, boolean now) {
    String prefix = setting == null ? "" : "setting '" + setting + "': ";
    String content;
    try {
      content = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      // the exception's class only: a decoding error's message could quote the content
      throw failure(now, prefix + "cannot read the " + what + " " + file + " ("
          + e.getClass().getSimpleName() + ")");
    }
    int end = content.length();
    if (content.endsWith("\n")) {
      end -= content.endsWith("\r\n") ? 2 : 1;
    }
    if (end == 0) {
      throw failure(now, prefix + "the " + what + " " + file + " is empty");
    }
    return content.substring(0, end);
  }

  private static RuntimeException failure(boolean now, String message) {
    return now ? new IllegalArgumentException(message) : new IllegalStateException(message);
  }
}
