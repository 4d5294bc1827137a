package dev.leases.redis;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Function;

/**
 * A file holding a password; one trailing line break ({@code \n} or {@code \r\n}) is not part of
 * it. Messages name the file, never its content.
 */
record PasswordFile(Path path) {

  PasswordFile {
    Objects.requireNonNull(path, "passwordFile must not be null");
  }

  /** The password now; {@code failure} makes the exception for an unreadable or empty file. */
  String read(Function<String, RuntimeException> failure) {
    String content;
    try {
      content = Files.readString(path, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      // the exception's class only: a decoding error's message could quote the content
      throw failure.apply("cannot read the Redis password file " + path + " ("
          + e.getClass().getSimpleName() + ")");
    }
    int end = content.length();
    if (content.endsWith("\n")) {
      end -= content.endsWith("\r\n") ? 2 : 1;
    }
    if (end == 0) {
      throw failure.apply("the Redis password file " + path + " is empty");
    }
    return content.substring(0, end);
  }
}
