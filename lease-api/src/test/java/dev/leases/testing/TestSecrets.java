package dev.leases.testing;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Helpers of the backends' credential tests (shared through lease-api's test jar): random names
 * and passwords, 0600 password files, and the whole text of an exception, to grep for a password.
 */
public final class TestSecrets {

  private TestSecrets() {}

  /** {@code prefix} and 12 random hex digits. */
  public static String random(String prefix) {
    byte[] b = new byte[6];
    ThreadLocalRandom.current().nextBytes(b);
    return prefix + HexFormat.of().formatHex(b);
  }

  /** A 0600 file holding {@code content}, deleted at JVM exit. */
  public static Path file(String content) throws java.io.IOException {
    Path f = Files.createTempFile("leases-secret-", ".txt",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(f, content, StandardCharsets.UTF_8);
    f.toFile().deleteOnExit();
    return f;
  }

  /** Every message and toString in {@code t}, its causes and suppressed exceptions. */
  public static String chain(Throwable t) {
    StringBuilder b = new StringBuilder();
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    List<Throwable> todo = new ArrayList<>(List.of(t));
    while (!todo.isEmpty()) {
      Throwable c = todo.remove(todo.size() - 1);
      if (c == null || !seen.add(c)) {
        continue;
      }
      b.append(c).append('\n').append(c.getMessage()).append('\n');
      todo.add(c.getCause());
      todo.addAll(List.of(c.getSuppressed()));
    }
    return b.toString();
  }
}
