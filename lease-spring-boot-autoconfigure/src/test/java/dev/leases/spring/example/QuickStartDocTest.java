package dev.leases.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/spring-boot.md quotes the example app's code as it is. */
class QuickStartDocTest {

  private static final Path SOURCES = Path.of("src/test/java/dev/leases/spring/example");

  private static String snippet(String file, String tag) throws Exception {
    String text = Files.readString(SOURCES.resolve(file));
    Matcher m = Pattern.compile("// quick-start:" + tag + "\n(.*?)// quick-start:end",
        Pattern.DOTALL).matcher(text);
    assertThat(m.find()).as("marker %s in %s", tag, file).isTrue();
    return m.group(1).stripTrailing();
  }

  @Test
  void theGuideQuotesTheExample() throws Exception {
    String doc = Files.readString(Path.of("../docs/spring-boot.md"));
    assertThat(doc).contains(snippet("InvoiceApp.java", "app"));
    assertThat(doc).contains(snippet("InvoiceJob.java", "job"));
  }
}
