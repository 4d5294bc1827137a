package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.testing.RandomNames;
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
      String name = RandomNames.next(random);
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
}
