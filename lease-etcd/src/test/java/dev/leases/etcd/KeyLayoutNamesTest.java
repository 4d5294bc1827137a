package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** No server needed: decoding a key gives back exactly the name it was made of, and nothing else. */
class KeyLayoutNamesTest {

  private final KeyLayout keys = new KeyLayout("my/leases");

  @Test
  void everyNameRoundTripsAndItsKeysStartWithTheKeysOfItsPrefixes() {
    Random random = new Random(13);
    for (int i = 0; i < 20_000; i++) {
      String name = randomName(random);
      int cut = name.offsetByCodePoints(0, random.nextInt(name.codePointCount(0, name.length()) + 1));
      String prefix = name.substring(0, cut);
      assertThat(keys.nameOf(KeyLayout.Named.LEASE, keys.leaseKey(name))).isEqualTo(name);
      assertThat(keys.nameOf(KeyLayout.Named.LAST, keys.lastKey(name))).isEqualTo(name);
      assertThat(keys.nameOf(KeyLayout.Named.LAST, keys.leaseKey(name))).isNull();
      assertThat(keys.leaseKey(name).startsWith(keys.namedFrom(KeyLayout.Named.LEASE, prefix)))
          .isTrue();
      assertThat(keys.lastKey(name).startsWith(keys.namedFrom(KeyLayout.Named.LAST, prefix)))
          .isTrue();
    }
  }

  @Test
  void keysThisLayoutNeverWritesDecodeToNothing() {
    for (String key : List.of("my/leases/last/", "my/leases/last/a/b", "my/leases/last/%zz",
        "my/leases/last/%2f", "my/leases/last/%41", "my/leases/last/%0A", "my/leases/last/x%",
        "my/leases/last/%C3", "my/leases/last/a b", "my/leases/lastx", "my/leases/fence/x",
        "my/leases/last/\u00e9", "my/leases/last/%20")) {
      assertThat(keys.nameOf(KeyLayout.Named.LAST, ByteSequence.from(key, StandardCharsets.UTF_8)))
          .as(key).isNull();
    }
  }

  /** Pieces of names: the escapes' own characters, separators, Latin-1, CJK, beyond U+FFFF. */
  private static final String[] PIECES = {"a", "Z", "0", "-", ".", "_", "~", "/", "%", "%2F",
      "~2F", " ", "?", "#", "\\", "\u00e9", "\u00ff", "\u65e5", "\uD83D\uDE00", "\uDBFF\uDFFF"};

  private static String randomName(Random random) {
    String name = random.ints(1 + random.nextInt(12), 0, PIECES.length)
        .mapToObj(i -> PIECES[i]).collect(java.util.stream.Collectors.joining());
    return name.isBlank() ? "x" + name : name;
  }
}
