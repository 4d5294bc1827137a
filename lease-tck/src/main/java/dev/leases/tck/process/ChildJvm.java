package dev.leases.tck.process;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started with this JVM's class path and driven like an orchestrator or hypervisor would:
 * commands on its stdin, lines read from its stdout, {@code SIGSTOP}/{@code SIGCONT}/{@code SIGKILL}
 * through {@code kill}. Its stderr (its log) goes to a file. Closing it resumes it if stopped and
 * kills it.
 */
public final class ChildJvm implements AutoCloseable {

  private final Process process;
  private final Path stderr;
  private final Writer stdin;
  private final List<String> lines = new ArrayList<>();
  private boolean outputEnded; // guarded by lines
  private volatile boolean stopped;

  private ChildJvm(Process process, Path stderr, String name) {
    this.process = process;
    this.stderr = stderr;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread reader = new Thread(this::readLines, name + "-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts {@code main} with {@code args} in a small JVM (128 MB heap, C1 only, serial GC: quick to
   * start, many fit on two cores), appending its stderr to {@code stderr}.
   */
  public static ChildJvm start(Class<?> main, List<String> args, Path stderr) throws IOException {
    return start(main, args, stderr, java.util.Map.of());
  }

  /**
   * Like {@link #start(Class, List, Path)}, with {@code env} added to the child's environment (for
   * example {@code LD_PRELOAD} of a clock-faking library).
   */
  public static ChildJvm start(Class<?> main, List<String> args, Path stderr,
      java.util.Map<String, String> env) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd)
        .redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()));
    pb.environment().putAll(env);
    Process p = pb.start();
    return new ChildJvm(p, stderr, "leases-child-" + main.getSimpleName());
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
      // the child is gone; waiters see the end of its output below
    } finally {
      synchronized (lines) {
        outputEnded = true;
        lines.notifyAll();
      }
    }
  }

  /** The child's process id. */
  public long pid() {
    return process.pid();
  }

  /** Number of lines received so far (use as {@code from} for the next wait). */
  public int lineCount() {
    synchronized (lines) {
      return lines.size();
    }
  }

  /**
   * The first line at index {@code from} or later that starts with {@code prefix}; empty if none
   * arrives within {@code timeout} or the child's output ends without one.
   */
  public Optional<String> awaitLine(String prefix, int from, Duration timeout)
      throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    synchronized (lines) {
      int i = from;
      while (true) {
        for (; i < lines.size(); i++) {
          if (lines.get(i).startsWith(prefix)) {
            return Optional.of(lines.get(i));
          }
        }
        long left = end - System.nanoTime();
        if (left <= 0 || outputEnded) {
          return Optional.empty();
        }
        lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      }
    }
  }

  /** Writes one command line to the child's standard input. */
  public void send(String command) throws IOException {
    stdin.write(command + "\n");
    stdin.flush();
  }

  /**
   * Sends {@code kill -SIGNAL pid}: STOP, CONT or KILL; nothing once the child has exited, since
   * the system may have handed its pid to another process (a server the test started, say).
   */
  public void signal(String signal) throws IOException, InterruptedException {
    if (!process.isAlive()) {
      return; // its pid may already belong to another process (pids wrap at pid_max, e.g. 32768)
    }
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

  /** Whether the child is still running (a stopped child is alive). */
  public boolean isAlive() {
    return process.isAlive();
  }

  /** Whether it was stopped with {@code SIGSTOP} and not resumed since. */
  public boolean isStopped() {
    return stopped;
  }

  /** Waits up to {@code timeout} for the child to exit; true if it did. */
  public boolean waitForExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Every line the child has printed so far. */
  public List<String> transcript() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  /** The last few kilobytes of the child's stderr (its log). */
  public String stderrTail() {
    try {
      String log = Files.readString(stderr);
      return log.length() <= 4000 ? log : log.substring(log.length() - 4000);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
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
      // best effort: it is killed next anyway
    }
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
