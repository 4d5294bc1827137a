package dev.leases.tck.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The kit tests itself: every {@link BrokenStore} must fail at least one scenario that the unbroken
 * reference store, served the same way, passes. Each broken store runs only the scenarios listed
 * for it (the ones able to catch it); the reference runs all of those, so a selection that fails
 * for unrelated reasons is never counted as a catch. Known gaps ({@link BrokenStore#survivesKit()})
 * are asserted to pass those kit scenarios, so that the day the kit catches them the catalogue is
 * corrected. The whole kit against the reference is {@code InMemoryLeaseStoreTckTest}.
 *
 * <p>{@code -Dleases.selftest.full=true} runs every scenario against every broken store instead, to
 * see everything that catches each one (slow: minutes); {@code -Dleases.selftest.stores=A,B} checks
 * only the broken stores named.
 */
class KitCatchesBrokenStoresTest {

  private static final boolean FULL = Boolean.getBoolean("leases.selftest.full");
  private static final Set<String> ONLY = Arrays.stream(
      System.getProperty("leases.selftest.stores", "").split(",")).map(String::strip)
      .filter(s -> !s.isEmpty()).collect(Collectors.toSet());
  private static final Map<BrokenStore, Run> RUNS = new ConcurrentHashMap<>();
  private static Run reference;

  @TestFactory
  Stream<DynamicTest> everyBrokenStoreFailsAScenarioTheReferencePasses() {
    List<DynamicTest> tests = new ArrayList<>();
    tests.add(DynamicTest.dynamicTest("REFERENCE passes every scenario a broken store is checked"
        + " with", () -> {
          Run r = reference();
          assertThat(r.containerFailures).as("reference: class-level failures").isEmpty();
          assertThat(r.ran).as("reference: scenarios run").containsExactlyInAnyOrderElementsOf(union());
          assertThat(r.failed).as("reference: failed scenarios").isEmpty();
        }));
    for (BrokenStore b : BrokenStore.values()) {
      if (b == BrokenStore.REFERENCE || !ONLY.isEmpty() && !ONLY.contains(b.name())) {
        continue;
      }
      tests.add(DynamicTest.dynamicTest(b + ": " + b.defect(), () -> check(b)));
    }
    return tests.stream();
  }

  private static void check(BrokenStore b) {
    Run ref = reference();
    Run r = run(b, selection(b));
    RUNS.put(b, r);
    assertThat(r.containerFailures).as("%s: class-level failures (the kit could not run)", b).isEmpty();
    assertThat(r.ran).as("%s: scenarios run", b).containsExactlyInAnyOrderElementsOf(selection(b));
    Set<String> caught = new LinkedHashSet<>(r.failed.keySet());
    caught.removeAll(ref.failed.keySet());
    Set<String> kitGap = new LinkedHashSet<>(b.survivesKit());
    kitGap.retainAll(caught);
    assertThat(kitGap).as("%s is listed as surviving these kit scenarios, but they now catch it:"
        + " remove them from its survivesKit()", b).isEmpty();
    Set<String> expected = new LinkedHashSet<>(selection(b));
    expected.removeAll(b.survivesKit());
    if (expected.isEmpty()) {
      assertThat(caught).as("%s: a known gap, caught by nothing", b).isEmpty();
    } else {
      assertThat(caught).as("%s (%s) must fail at least one scenario the reference passes; failures:"
          + " %s", b, b.defect(), r.failed).isNotEmpty();
    }
  }

  private static List<String> selection(BrokenStore b) {
    return FULL ? allScenarios() : b.scenarios();
  }

  private static Set<String> union() {
    if (FULL) {
      return new LinkedHashSet<>(allScenarios());
    }
    return Arrays.stream(BrokenStore.values()).flatMap(b -> b.scenarios().stream())
        .collect(Collectors.toCollection(LinkedHashSet::new));
  }

  private static List<String> allScenarios() {
    List<String> names = new ArrayList<>();
    for (Class<?> c = BrokenStoreKit.class; c != Object.class; c = c.getSuperclass()) {
      for (var m : c.getDeclaredMethods()) {
        if (m.isAnnotationPresent(org.junit.jupiter.api.Test.class)) {
          names.add(m.getName());
        }
      }
    }
    Collections.sort(names);
    return names;
  }

  private static synchronized Run reference() {
    if (reference == null) {
      reference = run(BrokenStore.REFERENCE, new ArrayList<>(union()));
    }
    return reference;
  }

  private static Run run(BrokenStore store, List<String> scenarios) {
    List<DiscoverySelector> selectors = FULL && scenarios.equals(allScenarios())
        ? List.of(selectClass(BrokenStoreKit.class))
        : scenarios.stream().<DiscoverySelector>map(m -> selectMethod(BrokenStoreKit.class, m)).toList();
    LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
        .selectors(selectors)
        .configurationParameter(BrokenStoreKit.STORE_PARAMETER, store.name())
        .build();
    Launcher launcher = LauncherFactory.create();
    Run run = new Run();
    long t0 = System.nanoTime();
    launcher.execute(request, run);
    run.seconds = (System.nanoTime() - t0) / 1e9;
    return run;
  }

  @AfterAll
  static void printTable() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format("%n%-40s %6s  %s%n", "broken store", "secs", "failed scenarios"));
    if (reference != null) {
      sb.append(String.format("%-40s %6.1f  %s%n", "REFERENCE", reference.seconds,
          reference.failed.isEmpty() ? "(none)" : reference.failed.keySet()));
    }
    for (BrokenStore b : BrokenStore.values()) {
      Run r = RUNS.get(b);
      if (r == null) {
        continue;
      }
      sb.append(String.format("%-40s %6.1f  %s%n", b, r.seconds,
          r.failed.isEmpty() ? "(none)" + (r.containerFailures.isEmpty() ? "" : " class-level: "
              + r.containerFailures) : String.join(", ", r.failed.keySet())));
    }
    sb.append(String.format("%nfirst failure line per broken store and scenario:%n"));
    for (BrokenStore b : BrokenStore.values()) {
      Run r = RUNS.get(b);
      if (r != null) {
        r.failed.forEach((m, why) -> sb.append(String.format("  %s / %s: %s%n", b, m, why)));
      }
    }
    System.out.print(sb);
    Path target = Path.of("target");
    if (Files.isDirectory(target)) {
      Files.writeString(target.resolve("kit-selftest" + (FULL ? "-full" : "") + ".txt"), sb);
    }
  }

  /** What one launcher run of {@link BrokenStoreKit} did. */
  private static final class Run implements TestExecutionListener {
    final Set<String> ran = ConcurrentHashMap.newKeySet();
    final Map<String, String> failed = Collections.synchronizedMap(new TreeMap<>());
    final List<String> containerFailures = Collections.synchronizedList(new ArrayList<>());
    double seconds;

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
      String method = id.getSource().filter(MethodSource.class::isInstance)
          .map(s -> ((MethodSource) s).getMethodName()).orElse(null);
      if (id.isTest() && method != null) {
        ran.add(method);
        if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
          failed.put(method, result.getThrowable().map(KitCatchesBrokenStoresTest::firstLine)
              .orElse(result.getStatus().toString()));
        }
      } else if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
        containerFailures.add(id.getDisplayName() + ": "
            + result.getThrowable().map(KitCatchesBrokenStoresTest::firstLine).orElse("?"));
      }
    }

    @Override
    public void executionSkipped(TestIdentifier id, String reason) {
      containerFailures.add(id.getDisplayName() + " skipped: " + reason);
    }
  }

  private static String firstLine(Throwable t) {
    String s = t.getClass().getSimpleName() + ": " + t.getMessage();
    s = s.replaceAll("\\s+", " ").trim();
    return s.length() > 220 ? s.substring(0, 220) + "..." : s;
  }
}
