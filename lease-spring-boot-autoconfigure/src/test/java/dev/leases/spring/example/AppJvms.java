package dev.leases.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.tck.process.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Example applications, each in its own child JVM through {@link InvoiceAppMain}: started
 * together, each run until {@link #stop()}, which answers what each JVM's {@code leases.runs}
 * timer counted. The children's logs go to one temporary file, named in every failure.
 */
public final class AppJvms implements AutoCloseable {

  private final List<ChildJvm> jvms = new ArrayList<>();
  private final Path log;

  private AppJvms(Path log) {
    this.log = log;
  }

  /**
   * Starts {@code count} JVMs of {@code app} (a Spring Boot application class) with Spring
   * {@code args} and returns once each has printed {@code READY}.
   */
  public static AppJvms start(Class<?> app, int count, List<String> args) throws Exception {
    AppJvms jvms = new AppJvms(Files.createTempFile(app.getSimpleName() + "-", ".log"));
    List<String> argv = new ArrayList<>();
    argv.add(app.getName());
    argv.addAll(args);
    try {
      for (int i = 0; i < count; i++) {
        jvms.jvms.add(ChildJvm.start(InvoiceAppMain.class, argv, jvms.log));
      }
      for (ChildJvm j : jvms.jvms) {
        assertThat(j.awaitLine("READY", 0, Duration.ofSeconds(120)))
            .as("child %d ready; log %s", j.pid(), jvms.log).isPresent();
      }
    } catch (Throwable t) {
      jvms.close();
      throw t;
    }
    return jvms;
  }

  /**
   * Stops the JVMs one after another (the others keep firing meanwhile) and answers, by pid, the
   * count of each {@code outcome} tag of {@code leases.runs} ({@code completed},
   * {@code already_completed}, {@code running_elsewhere}, ...). Each child stops its scheduler
   * and waits for its running job before it counts, so no run ends after it is counted.
   */
  public Map<Long, Map<String, Double>> stop() throws Exception {
    Map<Long, Map<String, Double>> byPid = new LinkedHashMap<>();
    for (ChildJvm j : jvms) {
      int from = j.lineCount();
      j.send("stop");
      assertThat(j.awaitLine("CLOSED", from, Duration.ofSeconds(60)))
          .as("child %d closed; log %s", j.pid(), log).isPresent();
      Map<String, Double> outcomes = new LinkedHashMap<>();
      for (String line : j.transcript()) {
        if (line.startsWith("RUNS ")) {
          String[] p = line.split(" ");
          outcomes.merge(p[1], Double.parseDouble(p[2]), Double::sum);
        }
      }
      byPid.put(j.pid(), outcomes);
    }
    return byPid;
  }

  /**
   * Asserts what two JVMs firing the same schedule must count: together {@code completedRuns}
   * completions, and each JVM fired, and more firings than completions (most runs fired in both).
   */
  public static void assertEachRunCompletedOnce(Map<Long, Map<String, Double>> byPid,
      long completedRuns) {
    double completed = byPid.values().stream()
        .mapToDouble(o -> o.getOrDefault("completed", 0d)).sum();
    assertThat(completed).as("completions counted by the JVMs %s", byPid)
        .isEqualTo((double) completedRuns);
    assertThat(byPid.values()).allSatisfy(o ->
        assertThat(o.values().stream().mapToDouble(Double::doubleValue).sum()).isPositive());
    double fired = byPid.values().stream()
        .flatMap(o -> o.values().stream()).mapToDouble(Double::doubleValue).sum();
    assertThat(fired).as("firings in %s", byPid).isGreaterThan(completedRuns);
  }

  /** The children's log file. */
  public Path log() {
    return log;
  }

  /** Kills the JVMs still running. */
  @Override
  public void close() {
    for (ChildJvm j : jvms) {
      j.close();
    }
  }
}
