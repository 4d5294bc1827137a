package dev.leases.time;

enum SystemClock implements LeaseClock {
  INSTANCE;

  @Override
  public long wallMillis() {
    return System.currentTimeMillis();
  }

  @Override
  public long monotonicNanos() {
    return System.nanoTime();
  }
}
