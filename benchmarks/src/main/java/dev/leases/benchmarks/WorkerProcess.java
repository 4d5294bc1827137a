package dev.leases.benchmarks;

import dev.leases.tck.process.StoreRecipe;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The harness's handle on one {@link FailoverWorkerMain} JVM: lines, commands and signals. */
final class WorkerProcess implements AutoCloseable {

  private final String id;
  private final Process process;
  private final Writer stdin;
  private final List<String> lines = new ArrayList<>();
  private volatile boolean stopped;

  private WorkerProcess(String id, Process process) {
    this.id = id;
    this.process = process;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread reader = new Thread(this::readLines, "worker-" + id);
    reader.setDaemon(true);
    reader.start();
  }

  static WorkerProcess start(String id, StoreRecipe recipe, String lease, Duration ttl,
      int fencePort, long workMs, Path log) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "-cp", System.getProperty("java.class.path"),
        FailoverWorkerMain.class.getName(),
        "--factory=" + recipe.factory().getName(),
        "--name=" + lease,
        "--ttl-ms=" + ttl.toMillis(),
        "--fence-port=" + fencePort,
        "--worker=" + id,
        "--work-ms=" + workMs));
    recipe.settings().forEach((k, v) -> cmd.add("--setting=" + k + "=" + v));
    Process p = new ProcessBuilder(cmd)
        .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    return new WorkerProcess(id, p);
  }

  private void readLines() {
    try (BufferedReader r = new BufferedReader(
        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        synchronized (lines) {
          lines.add(line);
          lines.notifyAll();
        }
      }
    } catch (IOException e) {
      // the worker is gone
    }
  }

  String id() {
    return id;
  }

  long pid() {
    return process.pid();
  }

  int lineCount() {
    synchronized (lines) {
      return lines.size();
    }
  }

  /** The first line from index {@code from} on that starts with {@code prefix}, or null on timeout. */
  String awaitLine(String prefix, int from, Duration timeout) throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    synchronized (lines) {
      int i = from;
      while (true) {
        for (; i < lines.size(); i++) {
          if (lines.get(i).startsWith(prefix)) {
            return lines.get(i);
          }
        }
        long left = end - System.nanoTime();
        if (left <= 0 || (!process.isAlive() && i >= lines.size())) {
          return null;
        }
        lines.wait(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(left))));
      }
    }
  }

  void send(String command) throws IOException {
    stdin.write(command + "\n");
    stdin.flush();
  }

  /** Sends a signal with {@code kill -SIG pid}: STOP, CONT or KILL. */
  void signal(String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid()))
        .redirectErrorStream(true).start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill -" + signal + " " + pid() + " failed: "
          + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
    if (signal.equals("STOP")) {
      stopped = true;
    } else if (signal.equals("CONT")) {
      stopped = false;
    }
  }

  boolean isAlive() {
    return process.isAlive();
  }

  boolean isStopped() {
    return stopped;
  }

  boolean waitForExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  List<String> transcript() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  @Override
  public void close() {
    if (!process.isAlive()) {
      return;
    }
    try {
      if (stopped) {
        signal("CONT");
      }
    } catch (Exception e) {
      // best effort
    }
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
