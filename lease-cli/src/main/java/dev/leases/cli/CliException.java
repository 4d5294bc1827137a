package dev.leases.cli;

/** Ends a command with {@link #exitCode()} and a message for the operator (on standard error). */
final class CliException extends RuntimeException {

  private final int exitCode;

  CliException(int exitCode, String message) {
    super(message);
    this.exitCode = exitCode;
  }

  CliException(int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
