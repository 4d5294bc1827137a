package dev.leases.spring;

import java.util.function.Supplier;

/** Observes fenced writes (the metrics auto-configuration counts them). */
public interface FenceWriteRecorder {

  /** Records nothing. */
  FenceWriteRecorder NONE = new FenceWriteRecorder() {
    @Override
    public <T> T record(String resource, Supplier<T> write) {
      return write.get();
    }
  };

  /** Runs {@code write}, a fenced write to {@code resource}, and returns or rethrows its result. */
  <T> T record(String resource, Supplier<T> write);
}
