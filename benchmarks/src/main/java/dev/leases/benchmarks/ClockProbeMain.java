package dev.leases.benchmarks;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * A tiny child JVM for the nemesis's start-up check of libfaketime: for each line on stdin it prints
 * {@code CLOCKS <currentTimeMillis> <nanoTime/1e6>} after a 50 ms sleep (so that a library that
 * breaks timed waits shows as a probe that never answers); it exits at the end of input.
 */
public final class ClockProbeMain {

  private ClockProbeMain() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    System.out.println("READY");
    while (in.readLine() != null) {
      Thread.sleep(50);
      System.out.println("CLOCKS " + System.currentTimeMillis() + " " + System.nanoTime() / 1_000_000);
    }
  }
}
