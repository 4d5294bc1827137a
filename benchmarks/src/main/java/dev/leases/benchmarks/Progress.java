package dev.leases.benchmarks;

import java.io.PrintStream;

/** Progress lines on stderr, each stamped with the time since the run started. */
final class Progress {

  private final PrintStream err;
  private final long t0 = System.nanoTime();

  Progress(PrintStream err) {
    this.err = err;
  }

  void say(String format, Object... args) {
    err.printf("[%6.1f s] %s%n", (System.nanoTime() - t0) / 1e9, String.format(format, args));
    err.flush();
  }

  double elapsedSeconds() {
    return (System.nanoTime() - t0) / 1e9;
  }
}
