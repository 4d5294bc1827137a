package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.testing.RandomNames;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** No server needed: decoding a key gives back exactly the name it was made of, and nothing else. */
class KeyLayoutNamesTest {

  private final KeyLayout keys = new KeyLayout("my/leases");

  @Test
  void everyNameRoundTripsAndItsKeyStartsWithTheKeysOfItsPrefixes() {
    Random random = new Random(13);
    for (int i = 0; i < 20_000; i++) {
      String name = RandomNames.next(random);
      String key = keys.keyOf(name);
      assertThat(keys.nameOf(key)).as(key).isEqualTo(name);
      int cut = name.offsetByCodePoints(0, random.nextInt(name.codePointCount(0, name.length()) + 1));
      assertThat(key).startsWith(keys.keysFrom(name.substring(0, cut)));
    }
  }

  @Test
  void keysThisLayoutNeverWritesDecodeToNothing() {
    for (String key : List.of("my/leases/", "my/leases/a/b", "my/leases/.once/", "my/leases/~zz",
        "my/leases/~2f", "my/leases/~41", "my/leases/~0A", "my/leases/x~", "my/leases/~C3",
        "my/leases/a.b", "my/leasesx", "other/x", "my/leases/\u00e9", "my/leases/~20")) {
      assertThat(keys.nameOf(key)).as(key).isNull();
    }
  }
}
