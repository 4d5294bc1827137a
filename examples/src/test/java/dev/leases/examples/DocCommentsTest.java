package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.ModifiersTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.DocTrees;
import com.sun.source.util.JavacTask;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import javax.lang.model.element.Modifier;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * Every public type and every public or protected member of the published library modules has a
 * doc comment, and every package a {@code package-info.java} with one. The build's Javadoc runs
 * doclint without its "missing" group (which would demand a {@code @param} for every parameter);
 * this is the part of "missing" we do want. Overriding methods inherit their comment, and a record's
 * components are documented by the record's {@code @param} tags.
 */
class DocCommentsTest {

  static final List<String> MODULES = List.of("lease-api", "lease-tck", "lease-micrometer",
      "lease-spring-boot-autoconfigure", "lease-redis", "lease-cli", "lease-postgres",
      "lease-etcd", "lease-consul");

  @Test
  void everyPublicTypeMemberAndPackageOfTheLibraryHasADocComment() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    List<Path> sources = new ArrayList<>();
    for (String module : MODULES) {
      Path dir = root.resolve(module).resolve("src/main/java");
      assertThat(dir).as("sources of %s", module).isDirectory();
      try (Stream<Path> files = Files.walk(dir)) {
        files.filter(p -> p.toString().endsWith(".java")).forEach(sources::add);
      }
    }
    Set<String> missing = new TreeSet<>();
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    try (StandardJavaFileManager fm = javac.getStandardFileManager(null, null, null)) {
      Iterable<? extends JavaFileObject> units = fm.getJavaFileObjectsFromPaths(sources);
      JavacTask task = (JavacTask) javac.getTask(null, fm, null, List.of("-proc:none"), null,
          units);
      DocTrees docs = DocTrees.instance(task);
      Set<String> packagesWithTypes = new TreeSet<>();
      Set<String> documentedPackages = new TreeSet<>();
      for (CompilationUnitTree unit : task.parse()) {
        String file = root.relativize(Path.of(unit.getSourceFile().toUri())).toString();
        String pkg = unit.getPackageName() == null ? "" : unit.getPackageName().toString();
        if (file.endsWith("package-info.java")) {
          if (docs.getDocCommentTree(new TreePath(unit)) != null
              || (unit.getPackage() != null
                  && docs.getDocCommentTree(new TreePath(new TreePath(unit), unit.getPackage()))
                  != null)) {
            documentedPackages.add(pkg);
          }
          continue;
        }
        new Scanner(docs, file, missing).scan(unit, null);
        if (unit.getTypeDecls().stream().anyMatch(t -> t instanceof ClassTree c
            && c.getModifiers().getFlags().contains(Modifier.PUBLIC))) {
          packagesWithTypes.add(pkg);
        }
      }
      for (String pkg : packagesWithTypes) {
        if (!documentedPackages.contains(pkg)) {
          missing.add("package " + pkg + ": no package-info.java with a doc comment");
        }
      }
    }
    assertThat(missing).as("public types and members without a doc comment (write one that states"
        + " the contract)").isEmpty();
  }

  /** Records what lacks a comment among the public API of one compilation unit. */
  private static final class Scanner extends TreePathScanner<Void, Void> {
    private final DocTrees docs;
    private final String file;
    private final Set<String> missing;
    private final List<ClassTree> enclosing = new ArrayList<>();

    Scanner(DocTrees docs, String file, Set<String> missing) {
      this.docs = docs;
      this.file = file;
      this.missing = missing;
    }

    @Override
    public Void visitClass(ClassTree c, Void unused) {
      boolean inInterface = !enclosing.isEmpty() && interfaceMember(enclosing.get(enclosing.size() - 1));
      if (!visible(c.getModifiers(), inInterface)) {
        return null; // nothing inside a non-public type is API
      }
      check(c.getSimpleName().toString());
      boolean hasConstructor = c.getMembers().stream().anyMatch(m -> m instanceof MethodTree mt
          && mt.getName().contentEquals("<init>"));
      if (!hasConstructor && c.getKind() == Tree.Kind.CLASS
          && !c.getModifiers().getFlags().contains(Modifier.ABSTRACT)) {
        missing.add(file + ": " + c.getSimpleName() + " has an implicit public constructor with no"
            + " comment (declare it, with a comment, or make it private)");
      }
      enclosing.add(c);
      try {
        return super.visitClass(c, unused);
      } finally {
        enclosing.remove(enclosing.size() - 1);
      }
    }

    @Override
    public Void visitMethod(MethodTree m, Void unused) {
      ClassTree owner = enclosing.get(enclosing.size() - 1);
      if (visible(m.getModifiers(), interfaceMember(owner)) && !overrides(m)
          && !documentedProperty(owner, m)) {
        String name = m.getName().contentEquals("<init>") ? owner.getSimpleName() + "(constructor)"
            : owner.getSimpleName() + "." + m.getName();
        check(name);
      }
      return null; // local classes are not API
    }

    @Override
    public Void visitVariable(VariableTree v, Void unused) {
      ClassTree owner = enclosing.get(enclosing.size() - 1);
      if (owner.getKind() == Tree.Kind.RECORD && !v.getModifiers().getFlags()
          .contains(Modifier.STATIC)) {
        return null; // a record component, documented by the record's @param
      }
      boolean enumConstant = owner.getKind() == Tree.Kind.ENUM
          && v.getType() instanceof com.sun.source.tree.IdentifierTree id
          && id.getName().contentEquals(owner.getSimpleName());
      if (enumConstant || visible(v.getModifiers(), interfaceMember(owner))) {
        check(owner.getSimpleName() + "." + v.getName());
      }
      return null;
    }

    /**
     * A JavaBean getter or setter ({@code getX}, {@code isX}, {@code setX}) of a field {@code x}
     * with a doc comment: the field documents the property (as Spring's configuration metadata
     * reads it), and a comment on each accessor would only repeat it.
     */
    private boolean documentedProperty(ClassTree owner, MethodTree m) {
      String n = m.getName().toString();
      String prop = n.startsWith("get") || n.startsWith("set") ? n.substring(3)
          : n.startsWith("is") ? n.substring(2) : "";
      if (prop.isEmpty()) {
        return false;
      }
      String field = Character.toLowerCase(prop.charAt(0)) + prop.substring(1);
      TreePath ownerPath = getCurrentPath().getParentPath();
      for (Tree member : owner.getMembers()) {
        if (member instanceof VariableTree v && v.getName().contentEquals(field)) {
          return docs.getDocCommentTree(new TreePath(ownerPath, v)) != null;
        }
      }
      return false;
    }

    private static boolean interfaceMember(ClassTree owner) {
      return owner.getKind() == Tree.Kind.INTERFACE
          || owner.getKind() == Tree.Kind.ANNOTATION_TYPE;
    }

    private static boolean visible(ModifiersTree mods, boolean publicByDefault) {
      Set<Modifier> f = mods.getFlags();
      return f.contains(Modifier.PUBLIC) || f.contains(Modifier.PROTECTED)
          || (publicByDefault && !f.contains(Modifier.PRIVATE));
    }

    private static boolean overrides(MethodTree m) {
      return m.getModifiers().getAnnotations().stream()
          .anyMatch(a -> a.getAnnotationType().toString().equals("Override"));
    }

    private void check(String what) {
      if (docs.getDocCommentTree(getCurrentPath()) == null) {
        CompilationUnitTree unit = getCurrentPath().getCompilationUnit();
        long pos = docs.getSourcePositions().getStartPosition(unit, getCurrentPath().getLeaf());
        missing.add(file + ":" + unit.getLineMap().getLineNumber(pos) + ": " + what);
      }
    }
  }
}
