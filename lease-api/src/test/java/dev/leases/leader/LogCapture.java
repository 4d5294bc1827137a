package dev.leases.leader;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Captures what slf4j-simple writes to {@code System.err} (it looks the stream up per line). */
final class LogCapture {

  private LogCapture() {}

  static synchronized String during(Runnable action) {
    PrintStream original = System.err;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    System.setErr(new PrintStream(new java.io.OutputStream() {
      @Override
      public void write(int b) {
        capture.write(b);
        original.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        capture.write(b, off, len);
        original.write(b, off, len);
      }
    }, true, StandardCharsets.UTF_8));
    try {
      action.run();
    } finally {
      System.setErr(original);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
