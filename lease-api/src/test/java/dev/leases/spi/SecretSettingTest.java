package dev.leases.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SecretSettingTest {

  private static final String SECRET = "s3cr\u00e9t-value";

  @TempDir Path dir;

  @Test
  void atMostOneSourceIsAccepted() {
    assertThat(SecretSetting.requireAtMostOne(Map.of("other", "x"), "the password",
        "passwordFile", "passwordEnv")).isNull();
    assertThat(SecretSetting.requireAtMostOne(Map.of("passwordEnv", "V"), "the password",
        "passwordFile", "passwordEnv")).isEqualTo("passwordEnv");
    assertThatThrownBy(() -> SecretSetting.requireAtMostOne(
        Map.of("passwordFile", "/f", "passwordEnv", SECRET), "the etcd password",
        "passwordFile", "passwordEnv"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("give the etcd password one way, not [passwordFile, passwordEnv]")
        .hasMessageNotContaining(SECRET).hasMessageNotContaining("/f");
  }

  @Test
  void anEnvironmentVariableMustBeSetAndNotEmpty() {
    Map<String, String> env = Map.of("SET", SECRET, "EMPTY", "");
    UnaryOperator<@Nullable String> environment = env::get;
    assertThat(SecretSetting.fromEnvironment("passwordEnv", " SET ", environment))
        .isEqualTo(SECRET);
    for (String variable : new String[] {"EMPTY", "UNSET"}) {
      assertThatThrownBy(() -> SecretSetting.fromEnvironment("passwordEnv", variable, environment))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("setting 'passwordEnv' names the environment variable " + variable
              + ", which is not set or empty");
    }
  }

  @Test
  void aFileLosesOneTrailingLineBreakOnly() throws Exception {
    for (String[] c : new String[][] {{SECRET, SECRET}, {SECRET + "\n", SECRET},
        {SECRET + "\r\n", SECRET}, {SECRET + "\n\n", SECRET + "\n"},
        {" " + SECRET, " " + SECRET}}) {
      Path file = Files.writeString(dir.resolve("secret"), c[0], StandardCharsets.UTF_8);
      assertThat(SecretSetting.readFile("passwordFile", "password file", file)).isEqualTo(c[1]);
    }
  }

  @Test
  void aMissingEmptyOrUndecodableFileIsRefusedByNameNeverByContent() throws Exception {
    Path missing = dir.resolve("missing");
    assertThatThrownBy(() -> SecretSetting.readFile("passwordFile", "password file", missing))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("setting 'passwordFile': cannot read the password file " + missing
            + " (NoSuchFileException)");
    for (String content : new String[] {"", "\n", "\r\n"}) {
      Path empty = Files.writeString(dir.resolve("empty"), content);
      assertThatThrownBy(() -> SecretSetting.readFile(null, "ACL token file", empty))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("the ACL token file " + empty + " is empty");
    }
    Path latin1 = Files.write(dir.resolve("latin1"), (SECRET + "\u00ff").getBytes(
        StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> SecretSetting.readFile("aclTokenFile", "ACL token file", latin1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("aclTokenFile").hasMessageContaining(latin1.toString())
        .hasMessageNotContaining("s3cr");
  }

  @Test
  void aRereadingSupplierPicksUpARotationAndFailsWithIllegalState() throws Exception {
    Path file = Files.writeString(dir.resolve("rotating"), "first\n");
    Supplier<String> secret = SecretSetting.rereadingFile("passwordFile", "password file", file);
    assertThat(secret.get()).isEqualTo("first");
    Files.writeString(file, "second\n");
    assertThat(secret.get()).isEqualTo("second");
    Files.delete(file);
    assertThatThrownBy(secret::get).isInstanceOf(IllegalStateException.class)
        .hasMessage("setting 'passwordFile': cannot read the password file " + file
            + " (NoSuchFileException)");
    assertThatThrownBy(() -> SecretSetting.rereadingFile("passwordFile", "password file", file))
        .as("a missing file is refused up front").isInstanceOf(IllegalArgumentException.class);
  }
}
