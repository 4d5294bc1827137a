package dev.leases.testing;

import java.util.Random;
import java.util.stream.Collectors;

/**
 * Random valid lease names for key-encoding tests, built from the pieces that trip encoders: the
 * escapes' own characters ({@code %}, {@code ~}, {@code %2F}, {@code ~2F}), separators, Latin-1,
 * CJK and characters beyond U+FFFF.
 */
public final class RandomNames {

  private static final String[] PIECES = {"a", "Z", "0", "-", ".", "_", "~", "/", "%", "%2F",
      "~2F", " ", "?", "#", "\\", "\u00e9", "\u00ff", "\u65e5", "\uD83D\uDE00", "\uDBFF\uDFFF"};

  private RandomNames() {}

  /** A name of 1 to 12 pieces, never blank. */
  public static String next(Random random) {
    String name = random.ints(1 + random.nextInt(12), 0, PIECES.length)
        .mapToObj(i -> PIECES[i]).collect(Collectors.joining());
    return name.isBlank() ? "x" + name : name;
  }
}
