package dev.leases.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waiting on a condition in tests on the real clock: poll, never a fixed sleep. */
public final class Conditions {

  private Conditions() {}

  /** Polls {@code ok} every 10 ms until it holds; fails after {@code max}. */
  public static void waitUntil(String what, Duration max, BooleanSupplier ok)
      throws InterruptedException {
    long end = System.nanoTime() + max.toNanos();
    while (!ok.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out after " + max + " waiting until " + what);
      }
      Thread.sleep(10);
    }
  }
}
