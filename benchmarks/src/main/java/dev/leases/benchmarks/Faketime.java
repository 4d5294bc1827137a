package dev.leases.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Clock faults for worker JVMs through Debian's libfaketime: the library is preloaded
 * ({@code LD_PRELOAD}) and reads the offset from a per-worker file on every clock call
 * ({@code FAKETIME_TIMESTAMP_FILE}, {@code FAKETIME_NO_CACHE=1}), so the harness moves a running
 * worker's clocks by rewriting the file. A worker started {@code wallOnly} has
 * {@code FAKETIME_DONT_FAKE_MONOTONIC=1}: only {@link System#currentTimeMillis()} moves; otherwise
 * both it and {@link System#nanoTime()} move by the same offset. The mode is per process, fixed at
 * start.
 */
final class Faketime {

  static final String INSTALL_HINT = "install it with apt-get install -y faketime (Debian package"
      + " libfaketime provides libfaketime.so.1), or set LEASES_FAKETIME_LIB to the library's path";

  private Faketime() {}

  /**
   * The library: {@code $LEASES_FAKETIME_LIB}, else what {@code dpkg -L libfaketime} lists, else
   * the usual multiarch and plain paths.
   */
  static Optional<Path> library() {
    String env = System.getenv("LEASES_FAKETIME_LIB");
    if (env != null && !env.isBlank()) {
      Path p = Path.of(env);
      return Files.isReadable(p) ? Optional.of(p) : Optional.empty();
    }
    List<Path> candidates = new ArrayList<>(dpkgListing());
    for (String dir : List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib",
        "/usr/lib64", "/usr/local/lib")) {
      candidates.add(Path.of(dir, "faketime", "libfaketime.so.1"));
    }
    return candidates.stream().filter(Files::isReadable).findFirst();
  }

  private static List<Path> dpkgListing() {
    try {
      Process p = new ProcessBuilder("dpkg", "-L", "libfaketime").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return List.of();
      }
      return out.lines().filter(l -> l.endsWith("/libfaketime.so.1")).map(Path::of).toList();
    } catch (IOException e) {
      return List.of(); // no dpkg: the fixed paths follow
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return List.of();
    }
  }

  /**
   * The environment of a worker whose clocks follow {@code offsetFile}. In the wall-only mode the
   * library's "monotonic fix" for {@code pthread_cond_timedwait} is turned off: with it, every timed
   * wait of a JVM returns at once and each JVM spins on two cores (measured with libfaketime 0.9.10);
   * with both clocks faked the fix is needed (without it timed waits hang after a rewind), so that
   * mode keeps the library's default.
   */
  static Map<String, String> env(Path library, Path offsetFile, boolean wallOnly) {
    Map<String, String> env = new java.util.LinkedHashMap<>(Map.of(
        "LD_PRELOAD", library.toString(),
        "FAKETIME_TIMESTAMP_FILE", offsetFile.toAbsolutePath().toString(),
        "FAKETIME_NO_CACHE", "1",
        "FAKETIME_DONT_FAKE_MONOTONIC", wallOnly ? "1" : "0"));
    if (wallOnly) {
      env.put("FAKETIME_FORCE_MONOTONIC_FIX", "0");
    }
    return env;
  }

  /**
   * Sets the offset from real time, atomically (a new file moved over the old one, so a clock call
   * never reads half a line).
   */
  static void setOffset(Path offsetFile, long offsetMs) throws IOException {
    Path tmp = offsetFile.resolveSibling(offsetFile.getFileName() + ".tmp");
    Files.writeString(tmp, format(offsetMs) + "\n");
    Files.move(tmp, offsetFile, StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }

  /** libfaketime's relative form: {@code +0}, {@code -3.500s}, {@code +1209600.000s}. */
  static String format(long offsetMs) {
    if (offsetMs == 0) {
      return "+0";
    }
    return String.format(Locale.ROOT, "%s%d.%03ds", offsetMs < 0 ? "-" : "+",
        Math.abs(offsetMs) / 1000, Math.abs(offsetMs) % 1000);
  }
}
