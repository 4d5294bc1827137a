package dev.leases.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
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
 * For the backends' secrets tests (shared through lease-api's test jar): distinctive random
 * values, 0600 files holding a secret, and the text of a whole exception chain to search for one.
 */
public final class Secrets {

  private Secrets() {}

  /** {@code prefix} followed by 12 random hex digits. */
  public static String random(String prefix) {
    byte[] b = new byte[6];
    ThreadLocalRandom.current().nextBytes(b);
    return prefix + HexFormat.of().formatHex(b);
  }

  /** A 0600 temporary file holding {@code content} (UTF-8), deleted at JVM exit. */
  public static Path file(String content) {
    try {
      Path f = Files.createTempFile("leases-secret-", "",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(f, content, StandardCharsets.UTF_8);
      f.toFile().deleteOnExit();
      return f;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Calls {@code store}'s acquire, inspect and release, each of which must fail (the store's
   * credentials are refused or its server unreachable), and subscribes and unsubscribes a release
   * listener; returns the three exceptions. Fails if a call succeeds or the store's
   * {@code toString()} shows {@code secret}.
   */
  public static List<RuntimeException> failingCalls(dev.leases.LeaseStore store, String secret) {
    if (store.toString().contains(secret)) {
      throw new AssertionError("the store's toString() shows the secret: " + store);
    }
    List<RuntimeException> thrown = new ArrayList<>();
    List<Runnable> calls = List.of(
        () -> store.acquireOrRenew("s", dev.leases.HolderId.generate(),
            java.time.Duration.ofSeconds(5)),
        () -> store.inspect("s"), () -> store.release("s", dev.leases.HolderId.generate()));
    for (Runnable call : calls) {
      try {
        call.run();
        throw new AssertionError("a call with refused credentials or no server succeeded");
      } catch (RuntimeException e) {
        thrown.add(e);
      }
    }
    store.onRelease("s", () -> {}).close();
    return thrown;
  }

  /** Every message and toString in {@code t}'s causes and suppressed exceptions. */
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
