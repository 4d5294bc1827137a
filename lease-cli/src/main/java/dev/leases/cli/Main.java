package dev.leases.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/** The executable jar's entry point: {@code java -jar lease-cli.jar COMMAND ...}. */
public final class Main {

  private Main() {}

  public static void main(String[] args) {
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    System.exit(LeasesCli.execute(out, err, System.getenv(), args));
  }
}
