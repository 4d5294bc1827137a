package dev.leases.testing;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Captures what slf4j-simple writes to {@code System.err} (it looks the stream up per line), for
 * tests that must prove a line was logged. Shared with other modules' tests through lease-api's
 * test jar.
 */
public final class LogCapture {

  private static volatile ByteArrayOutputStream current;

  private LogCapture() {}

  /** What {@link #during} has captured so far, from inside its action; empty outside it. */
  public static String snapshot() {
    ByteArrayOutputStream c = current;
    if (c == null) {
      return "";
    }
    synchronized (c) {
      return c.toString(StandardCharsets.UTF_8);
    }
  }

  /** Runs {@code action} and returns what was logged meanwhile (also still printed). */
  public static synchronized String during(Runnable action) {
    PrintStream original = System.err;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    current = bytes;
    System.setErr(new PrintStream(new java.io.OutputStream() {
      @Override
      public void write(int b) {
        synchronized (bytes) {
          capture.write(b);
        }
        original.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        synchronized (bytes) {
          capture.write(b, off, len);
        }
        original.write(b, off, len);
      }
    }, true, StandardCharsets.UTF_8));
    try {
      action.run();
    } finally {
      System.setErr(original);
      current = null;
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
