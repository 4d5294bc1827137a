package dev.leases.tck.process;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The parent's handle on a {@link LeaderProcessMain} child JVM: start it, send commands, read its
 * lines, and signal it ({@code SIGSTOP}, {@code SIGCONT}, {@code SIGKILL}) like an orchestrator or
 * hypervisor would. A wait that fails says what the child printed and logged.
 */
public final class LeaderProcess implements AutoCloseable {

  private final ChildJvm child;
  private final Path log;

  private LeaderProcess(ChildJvm child, Path log) {
    this.child = child;
    this.log = log;
  }

  /** Starts a child JVM with this JVM's class path, logging to a temporary file. */
  public static LeaderProcess start(StoreRecipe recipe, String leaseName, Duration ttl,
      Duration renewInterval) throws IOException {
    Path log = Files.createTempFile("leases-child-", ".log");
    List<String> args = ChildArgs.format(recipe, Map.of("name", leaseName,
        "ttl-ms", Long.toString(ttl.toMillis()), "renew-ms", Long.toString(renewInterval.toMillis())));
    return new LeaderProcess(ChildJvm.start(LeaderProcessMain.class, args, log), log);
  }

  /** The child's process id. */
  public long pid() {
    return child.pid();
  }

  /** Writes one command line to the child's standard input. */
  public void send(String command) throws IOException {
    child.send(command);
  }

  /**
   * Waits for the first line starting with {@code prefix} that arrived at line index {@code from}
   * or later, and returns it.
   *
   * @throws AssertionError with the child's transcript and log if none arrives in time
   */
  public String awaitLine(String prefix, int from, Duration timeout) throws InterruptedException {
    return child.awaitLine(prefix, from, timeout).orElseThrow(() -> new AssertionError("child "
        + pid() + " printed no line starting with '" + prefix + "' within " + timeout + "; alive="
        + child.isAlive() + "; transcript: " + child.transcript() + "; its log ends:\n"
        + child.stderrTail()));
  }

  /** Number of lines received so far (use as {@code from} for the next await). */
  public int lineCount() {
    return child.lineCount();
  }

  /** Sends {@code command} and returns the number after {@code replyPrefix} in its answer. */
  public long ask(String command, String replyPrefix, Duration timeout)
      throws IOException, InterruptedException {
    int from = lineCount();
    send(command);
    String line = awaitLine(replyPrefix + " ", from, timeout);
    return Long.parseLong(line.substring(replyPrefix.length() + 1).trim().split(" ")[0]);
  }

  /** Sends a Unix signal ({@code STOP}, {@code CONT}, {@code KILL}, ...) with {@code kill}. */
  public void signal(String signal) throws IOException, InterruptedException {
    child.signal(signal);
  }

  /** Whether the child is still running (a stopped child is alive). */
  public boolean isAlive() {
    return child.isAlive();
  }

  /** Waits up to {@code timeout} for the child to exit; true if it did. */
  public boolean waitForExit(Duration timeout) throws InterruptedException {
    return child.waitForExit(timeout);
  }

  /** Every line the child has printed so far. */
  public List<String> transcript() {
    return child.transcript();
  }

  @Override
  public void close() {
    child.close();
    try {
      Files.deleteIfExists(log);
    } catch (IOException e) {
      // a temp file left behind is not a failure
    }
  }
}
