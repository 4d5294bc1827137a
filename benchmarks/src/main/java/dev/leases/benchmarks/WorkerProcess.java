package dev.leases.benchmarks;

import dev.leases.tck.process.ChildArgs;
import dev.leases.tck.process.ChildJvm;
import dev.leases.tck.process.StoreRecipe;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** The harness's handle on one {@link FailoverWorkerMain} JVM: lines, commands and signals. */
final class WorkerProcess implements AutoCloseable {

  private final String id;
  private final ChildJvm child;

  private WorkerProcess(String id, ChildJvm child) {
    this.id = id;
    this.child = child;
  }

  static WorkerProcess start(String id, StoreRecipe recipe, String lease, Duration ttl,
      int fencePort, long workMs, Path log) throws IOException {
    return start(id, recipe, lease, ttl, fencePort, workMs, log, Map.of(), Map.of());
  }

  /** Like the above, with extra worker options ({@code history-port}) and environment. */
  static WorkerProcess start(String id, StoreRecipe recipe, String lease, Duration ttl,
      int fencePort, long workMs, Path log, Map<String, String> options, Map<String, String> env)
      throws IOException {
    Map<String, String> all = new java.util.LinkedHashMap<>(Map.of("name", lease,
        "ttl-ms", Long.toString(ttl.toMillis()), "fence-port", Integer.toString(fencePort),
        "worker", id, "work-ms", Long.toString(workMs)));
    all.putAll(options);
    return new WorkerProcess(id, ChildJvm.start(FailoverWorkerMain.class,
        ChildArgs.format(recipe, all), log, env));
  }

  String id() {
    return id;
  }

  long pid() {
    return child.pid();
  }

  int lineCount() {
    return child.lineCount();
  }

  /** The first line from index {@code from} on that starts with {@code prefix}, or null on timeout. */
  String awaitLine(String prefix, int from, Duration timeout) throws InterruptedException {
    return child.awaitLine(prefix, from, timeout).orElse(null);
  }

  void send(String command) throws IOException {
    child.send(command);
  }

  /** Sends a signal with {@code kill -SIG pid}: STOP, CONT or KILL. */
  void signal(String signal) throws IOException, InterruptedException {
    child.signal(signal);
  }

  boolean isAlive() {
    return child.isAlive();
  }

  boolean isStopped() {
    return child.isStopped();
  }

  boolean waitForExit(Duration timeout) throws InterruptedException {
    return child.waitForExit(timeout);
  }

  List<String> transcript() {
    return child.transcript();
  }

  @Override
  public void close() {
    child.close();
  }
}
