package dev.leases.examples;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Runs an example's main as a user would and returns what it printed (echoed to the real out). */
final class ProgramOutput {

  /** An example's main. */
  interface Main {
    void run() throws Exception;
  }

  private ProgramOutput() {}

  static String of(Main main) throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      main.run();
    } finally {
      System.setOut(original);
    }
    String out = bytes.toString(StandardCharsets.UTF_8);
    original.print(out);
    return out;
  }
}
