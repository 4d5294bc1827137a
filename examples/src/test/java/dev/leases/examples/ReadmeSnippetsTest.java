package dev.leases.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every README snippet marked in an example file ({@code // README: name} ... {@code // README: end})
 * stands in README.md exactly, so the README cannot drift from code that compiles and runs.
 */
class ReadmeSnippetsTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  static Map<String, String> snippets() throws IOException {
    Map<String, String> found = new LinkedHashMap<>();
    try (Stream<Path> files = Files.walk(ROOT.resolve("examples/src/main/java"))) {
      for (Path p : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
        List<String> lines = Files.readAllLines(p);
        String name = null;
        List<String> body = new ArrayList<>();
        for (String line : lines) {
          String t = line.trim();
          if (t.startsWith("// README: ")) {
            String marker = t.substring("// README: ".length()).trim();
            if (marker.equals("end")) {
              found.put(name, String.join("\n", body));
              name = null;
              body.clear();
            } else {
              name = marker;
            }
          } else if (name != null) {
            body.add(line);
          }
        }
        assertThat(name).as("%s: a '// README: %s' without '// README: end'", p, name).isNull();
      }
    }
    return found;
  }

  @Test
  void everyMarkedSnippetStandsInTheReadmeExactly() throws IOException {
    String readme = Files.readString(ROOT.resolve("README.md"));
    Map<String, String> snippets = snippets();
    assertThat(snippets).as("snippets marked in examples/").containsKeys("quick-start",
        "exactly-once");
    snippets.forEach((name, text) -> assertThat(readme)
        .as("README.md must quote snippet '%s' from examples/ exactly (copy it again)", name)
        .contains("```java\n" + text + "\n```"));
  }
}
