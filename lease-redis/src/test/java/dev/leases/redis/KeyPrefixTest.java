package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** No server needed: prefixes are checked when the builder is configured. */
class KeyPrefixTest {

  @ParameterizedTest
  @ValueSource(strings = {"", "a{b", "a}b", "{leases}", "a b", "a\tb", "a\nb", "a\u0000b",
      "a*", "a?", "a[b]", "a\\b", "a%b", "ünï", "leases:",
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
  void hostilePrefixesAreRejectedWithAMessageThatSaysWhatToChange(String prefix) {
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:1").keyPrefix(prefix))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix");
  }

  @ParameterizedTest
  @ValueSource(strings = {"leases", "myapp:leases", "a.b_c-d/e", "L", "0123456789"})
  void ordinaryPrefixesAreAccepted(String prefix) {
    try (RedisLeaseStore s = RedisLeaseStore.builder("redis://127.0.0.1:1").keyPrefix(prefix)
        .build()) {
      assertThat(s.keysOf("n").get(0)).isEqualTo("{" + prefix + ":n}:lease");
      assertThat(s.releaseChannel()).isEqualTo(prefix + ":released");
    }
  }

  @org.junit.jupiter.api.Test
  void nullPrefixAndBadTimeoutsAreRejected() {
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:1").keyPrefix(null))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("keyPrefix");
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:1")
        .commandTimeout(java.time.Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisLeaseStore.builder("redis://127.0.0.1:1")
        .commandTimeout(java.time.Duration.ofHours(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shorter");
    assertThatThrownBy(() -> RedisLeaseStore.builder("not a uri"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("redis://");
  }
}
