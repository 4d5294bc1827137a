package dev.leases.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/** The executable jar's entry point: {@code java -jar lease-cli.jar COMMAND ...}. */
public final class Main {

  private Main() {}

  /** Runs one command line (see {@link LeasesCli}) and exits with its {@link ExitCodes exit code}. */
  public static void main(String[] args) {
    // Lettuce registers Java Flight Recorder events on first connect, which a one-shot command
    // pays for at start-up and never uses.
    if (System.getProperty("io.lettuce.core.jfr") == null) {
      System.setProperty("io.lettuce.core.jfr", "false");
    }
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    System.exit(LeasesCli.execute(out, err, System.getenv(), args));
  }
}
