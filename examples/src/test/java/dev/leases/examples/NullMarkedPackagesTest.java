package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.source.tree.AnnotationTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.ImportTree;
import com.sun.source.util.JavacTask;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * Every package of the published library modules ({@link DocCommentsTest#MODULES}) is
 * {@code @NullMarked} (JSpecify) in its {@code package-info.java}: in those packages a type without
 * {@code @Nullable} means "never null", which is what callers and their nullness checkers read. A
 * package with Java sources but no such {@code package-info.java} fails the test by name, so a new
 * package cannot silently fall back to "unknown nullness".
 */
class NullMarkedPackagesTest {

  private static final String NULL_MARKED = "org.jspecify.annotations.NullMarked";

  @Test
  void everyPackageOfTheLibraryIsNullMarked() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    Map<String, String> packages = new TreeMap<>(); // package directory -> its module
    List<Path> packageInfos = new ArrayList<>();
    for (String module : DocCommentsTest.MODULES) {
      Path dir = root.resolve(module).resolve("src/main/java");
      assertThat(dir).as("sources of %s", module).isDirectory();
      try (Stream<Path> files = Files.walk(dir)) {
        files.filter(p -> p.toString().endsWith(".java")).forEach(p -> {
          packages.put(root.relativize(p.getParent()).toString(), module);
          if (p.getFileName().toString().equals("package-info.java")) {
            packageInfos.add(p);
          }
        });
      }
    }
    assertThat(packages).as("library packages found").isNotEmpty();
    Set<String> marked = new TreeSet<>(); // package directories whose package-info says @NullMarked
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    try (StandardJavaFileManager fm = javac.getStandardFileManager(null, null, null)) {
      Iterable<? extends JavaFileObject> units = fm.getJavaFileObjectsFromPaths(packageInfos);
      JavacTask task = (JavacTask) javac.getTask(null, fm, null, List.of("-proc:none"), null,
          units);
      for (CompilationUnitTree unit : task.parse()) {
        if (unit.getPackage() != null
            && unit.getPackage().getAnnotations().stream().anyMatch(a -> nullMarked(unit, a))) {
          marked.add(root.relativize(Path.of(unit.getSourceFile().toUri()).getParent()).toString());
        }
      }
    }
    Set<String> unmarked = new TreeSet<>();
    packages.forEach((dir, module) -> {
      if (!marked.contains(dir)) {
        unmarked.add(dir + " (" + module + ")");
      }
    });
    assertThat(unmarked).as("library packages without @NullMarked in their package-info.java (add"
        + " '@NullMarked' before 'package' and 'import org.jspecify.annotations.NullMarked;' after"
        + " it, then mark with @Nullable whatever in the package may be null)").isEmpty();
  }

  /** Whether {@code a} is JSpecify's {@code @NullMarked}, written qualified or imported. */
  private static boolean nullMarked(CompilationUnitTree unit, AnnotationTree a) {
    String name = a.getAnnotationType().toString();
    if (name.equals(NULL_MARKED)) {
      return true;
    }
    return name.equals("NullMarked") && unit.getImports().stream()
        .filter(i -> !i.isStatic())
        .map(ImportTree::getQualifiedIdentifier)
        .map(Object::toString)
        .anyMatch(i -> i.equals(NULL_MARKED) || i.equals("org.jspecify.annotations.*"));
  }
}
