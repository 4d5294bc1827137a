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
import java.util.concurrent.TimeUnit;

/**
 * The parent's handle on a {@link LeaderProcessMain} child JVM: start it, send commands, read its
 * lines, and signal it ({@code SIGSTOP}, {@code SIGCONT}, {@code SIGKILL}) like an orchestrator or
 * hypervisor would.
 */
public final class LeaderProcess implements AutoCloseable {

  private final Process process;
  private final Path stderr;
  private final Writer stdin;
  private final List<String> lines = new ArrayList<>();
  private final Thread reader;

  private LeaderProcess(Process process, Path stderr) {
    this.process = process;
    this.stderr = stderr;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    this.reader = new Thread(this::readLines, "leases-child-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /** Starts a child JVM with this JVM's class path. */
  public static LeaderProcess start(StoreRecipe recipe, String leaseName, Duration ttl,
      Duration renewInterval) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx128m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(LeaderProcessMain.class.getName());
    cmd.add("--factory=" + recipe.factory().getName());
    cmd.add("--name=" + leaseName);
    cmd.add("--ttl-ms=" + ttl.toMillis());
    cmd.add("--renew-ms=" + renewInterval.toMillis());
    recipe.settings().forEach((k, v) -> cmd.add("--setting=" + k + "=" + v));
    Path stderr = Files.createTempFile("leases-child-", ".log");
    Process p = new ProcessBuilder(cmd).redirectError(stderr.toFile()).start();
    return new LeaderProcess(p, stderr);
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
      // the child is gone; callers waiting for lines time out with the transcript
    }
  }

  public long pid() {
    return process.pid();
  }

  public void send(String command) throws IOException {
    stdin.write(command + "\n");
    stdin.flush();
  }

  /**
   * Waits for the first line starting with {@code prefix} that arrived after line index
   * {@code from}, and returns it.
   *
   * @throws AssertionError with the child's transcript if none arrives in time
   */
  public String awaitLine(String prefix, int from, Duration timeout) throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    synchronized (lines) {
      while (true) {
        for (int i = from; i < lines.size(); i++) {
          if (lines.get(i).startsWith(prefix)) {
            return lines.get(i);
          }
        }
        long left = end - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError("child " + pid() + " printed no line starting with '" + prefix
              + "' within " + timeout + "; alive=" + process.isAlive() + "; transcript: " + lines
              + "; its log ends:\n" + stderrTail());
        }
        lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      }
    }
  }

  /** Number of lines received so far (use as {@code from} for the next await). */
  public int lineCount() {
    synchronized (lines) {
      return lines.size();
    }
  }

  /** Sends "CAPTURE"-style command and returns the long after the reply prefix. */
  public long ask(String command, String replyPrefix, Duration timeout)
      throws IOException, InterruptedException {
    int from = lineCount();
    send(command);
    String line = awaitLine(replyPrefix + " ", from, timeout);
    return Long.parseLong(line.substring(replyPrefix.length() + 1).trim().split(" ")[0]);
  }

  public void signal(String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid()))
        .redirectErrorStream(true).start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill -" + signal + " " + pid() + " failed: "
          + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  public boolean waitForExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
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

  public List<String> transcript() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      try {
        signal("CONT");
      } catch (Exception e) {
        // best effort: it may be gone
      }
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      Files.deleteIfExists(stderr);
    } catch (IOException e) {
      // a temp file left behind is not a failure
    }
  }
}
