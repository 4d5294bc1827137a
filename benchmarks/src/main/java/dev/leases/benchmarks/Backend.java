package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.tck.process.StoreRecipe;
import java.util.Map;

/**
 * One store under test, up and reachable: how the harness opens clients in its own JVM, how a
 * worker JVM opens one, and the store's plain single-key write to compare lease calls with.
 * Started by a {@link Backends.Kind}; {@link #close()} stops whatever the kind started.
 */
interface Backend extends AutoCloseable {

  String name();

  /** What runs, for the report: product, version, where it came from. */
  String description();

  /** A new client in this JVM (the caller closes it). */
  LeaseStore openStore();

  /** How a worker JVM opens a client of the same store. */
  StoreRecipe recipe();

  /** The store's cheapest durable-ish single-key write, or null if there is none to compare. */
  PlainWrite plainWrite() throws Exception;

  /** Extra facts for the JSON report (server version, endpoint). */
  default Map<String, String> facts() {
    return Map.of();
  }

  @Override
  void close();

  /** A plain single-key write on the same store, the baseline for the latency ratio. */
  interface PlainWrite extends AutoCloseable {
    /** e.g. {@code "SET key value"}. */
    String what();

    void write(String key, long value) throws Exception;

    @Override
    default void close() {}
  }
}
