package dev.leases.cli;

import org.jspecify.annotations.Nullable;

/** Ends a command with {@link #exitCode()} and a message for the operator (on standard error). */
final class CliException extends RuntimeException {

  private final int exitCode;

  CliException(int exitCode, @Nullable String message) {
    super(message);
    this.exitCode = exitCode;
  }

  CliException(int exitCode, @Nullable String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
