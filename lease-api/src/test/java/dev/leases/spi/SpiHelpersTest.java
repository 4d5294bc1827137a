package dev.leases.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.LeaseStore;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SpiHelpersTest {

  @Test
  void listenersFireByNameSurviveAThrowingNeighbourAndUnsubscribeOnce() {
    ReleaseListeners listeners = new ReleaseListeners();
    List<String> heard = new ArrayList<>();
    listeners.add("a", () -> {
      throw new IllegalStateException("bug");
    });
    LeaseStore.Subscription sub = listeners.add("a", () -> heard.add("a1"));
    listeners.add("b", () -> heard.add("b1"));
    listeners.fire("a");
    assertThat(heard).containsExactly("a1");
    sub.close();
    sub.close();
    listeners.fire("a");
    listeners.fireAll();
    assertThat(heard).containsExactly("a1", "b1");
    assertThat(listeners.names()).containsExactlyInAnyOrder("a", "b");
    assertThat(listeners.has("a")).as("a keeps its throwing listener").isTrue();
    assertThat(listeners.has("missing")).isFalse();
    listeners.fire("missing");
    listeners.fire("b", r -> {
      throw new java.util.concurrent.RejectedExecutionException("closed");
    });
    listeners.clear();
    assertThat(listeners.isEmpty()).isTrue();
    assertThat(listeners.has("b")).isFalse();
  }

  @Test
  void percentEncodingIsInjectiveAndKeepsOnlyTheAllowedCharacters() {
    assertThat(KeyText.percentEncode("billing-nightly", "")).isEqualTo("billing-nightly");
    assertThat(KeyText.percentEncode("a/b:{c} ü%", "/")).isEqualTo("a/b%3A%7Bc%7D%20%C3%BC%25");
    assertThat(KeyText.percentEncode("%41", "%")).isEqualTo("%2541");
    assertThat(KeyText.percentEncode("x/y", "")).isNotEqualTo(KeyText.percentEncode("x%2Fy", ""));
  }

  @Test
  void prefixesAreCheckedWithMessagesThatSayWhatToChange() {
    assertThat(KeyText.requirePrefix("my-app.leases", "._-", "leases")).isEqualTo("my-app.leases");
    assertThatThrownBy(() -> KeyText.requirePrefix("a{b}", "._-", "leases"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'{' at index 1")
        .hasMessageContaining("\"leases\"");
    assertThatThrownBy(() -> KeyText.requirePrefix("", "._-", "leases"))
        .hasMessageContaining("1 to 64");
    assertThatThrownBy(() -> KeyText.requirePrefix("a\nb", "._-", "leases"))
        .hasMessageContaining("U+000A");
    assertThatThrownBy(() -> KeyText.requirePrefix(null, "._-", "leases"))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void decodeNameInvertsTheEncodingAndRefusesWhatNoNameIs() {
    for (String name : java.util.List.of("billing-nightly", "a/b:{c} \u00FC%", "\uD83D\uDE00 x", "%41")) {
      assertThat(KeyText.decodeName(KeyText.percentEncode(name, ""), '%')).isEqualTo(name);
    }
    assertThat(KeyText.decodeName("a~2Fb", '~')).isEqualTo("a/b");
    assertThat(KeyText.decodeName("a%2fb", '%')).as("hex case is the caller's check").isEqualTo("a/b");
    assertThat(KeyText.decodeName("a%2", '%')).as("cut escape").isNull();
    assertThat(KeyText.decodeName("a%zz", '%')).as("not hex").isNull();
    assertThat(KeyText.decodeName("\u00FC", '%')).as("non-ASCII text").isNull();
    assertThat(KeyText.decodeName("%C3", '%')).as("half a UTF-8 character").isNull();
    assertThat(KeyText.decodeName("%ED%A0%80", '%')).as("an encoded surrogate").isNull();
    assertThat(KeyText.decodeName("a%00b", '%')).as("a control character").isNull();
    assertThat(KeyText.decodeName("", '%')).as("empty").isNull();
    assertThat(KeyText.decodeName("x".repeat(201), '%')).as("too long").isNull();
  }
}
