package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.tck.process.StoreRecipe;
import java.util.Map;
import java.util.concurrent.Callable;

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

  /**
   * What the latency part times: a store, and the store's cheapest durable-ish single-key write to
   * compare its calls with. Where the client allows it, both go through one client connection and
   * one client I/O thread, so that they wait on the same server process and thread: otherwise the
   * ratio measures where the operating system placed two server processes (on 2 cores a call to a
   * PostgreSQL backend process on the other core took 85-100 µs against 16-24 µs on the caller's
   * core, whatever the statement, so a plain write on a second connection measured from 0.8 to
   * 4.7 times a lease call from one run to the next).
   */
  Compared compared() throws Exception;

  /** Extra facts for the JSON report (server version, endpoint). */
  default Map<String, String> facts() {
    return Map.of();
  }

  @Override
  void close();

  /**
   * A store and its plain write ({@code plain} null if the store has none to compare); closing
   * closes the store, then the plain write (which may close a client the store uses).
   */
  record Compared(LeaseStore store, PlainWrite plain) implements AutoCloseable {
    /** {@code store} with {@code plain} from {@code opener}; the store is closed if that fails. */
    static Compared of(LeaseStore store, Callable<PlainWrite> opener) throws Exception {
      try {
        return new Compared(store, opener.call());
      } catch (Exception | Error e) {
        store.close();
        throw e;
      }
    }

    @Override
    public void close() {
      try {
        store.close();
      } finally {
        if (plain != null) {
          plain.close();
        }
      }
    }
  }

  /** A plain single-key write on the same store, the baseline for the latency ratio. */
  interface PlainWrite extends AutoCloseable {
    /** e.g. {@code "SET key value"}. */
    String what();

    void write(String key, long value) throws Exception;

    @Override
    default void close() {}
  }
}
