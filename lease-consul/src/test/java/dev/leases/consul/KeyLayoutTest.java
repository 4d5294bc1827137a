package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** No server needed: prefixes and names are checked and encoded before anything is sent. */
class KeyLayoutTest {

  @ParameterizedTest
  @ValueSource(strings = {"", "/leases", "leases/", "a//b", ".", "..", "a/./b", "a/../b", "../x",
      "a b", "a\tb", "a\nb", "a\u0000b", "a%2Fb", "a?b", "a#b", "a*", "a{b}", "a\\b", "ünï", "~x",
      "a:b", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
  void hostilePrefixesAreRejectedWithAMessageThatSaysWhatToChange(String prefix) {
    assertThatThrownBy(() -> ConsulLeaseStore.builder("http://127.0.0.1:1").keyPrefix(prefix))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a\uD800", "\uDC00b", "a\uDBFF\uDBFFb"})
  void prefixesThatAreNotWellFormedUtf16AreRejectedAsSuch(String prefix) {
    assertThatThrownBy(() -> ConsulLeaseStore.builder("http://127.0.0.1:1").keyPrefix(prefix))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix")
        .hasMessageContaining("not well-formed UTF-16");
  }

  @ParameterizedTest
  @ValueSource(strings = {"leases", "myapp/leases", "a.b_c-d/e", "L", "0123456789", "a..b/c"})
  void ordinaryPrefixesAreAccepted(String prefix) {
    try (ConsulLeaseStore s = ConsulLeaseStore.builder("http://127.0.0.1:1").keyPrefix(prefix)
        .build()) {
      assertThat(s.keyOf("n")).isEqualTo(prefix + "/n");
      assertThat(s.keyPrefix()).isEqualTo(prefix);
    }
  }

  @Test
  void namesBecomeOneCleanSegmentThatConsulKeepsAsIs() {
    assertThat(KeyLayout.encode("billing-nightly_1")).isEqualTo("billing-nightly_1");
    assertThat(KeyLayout.encode("a b/../c.d~%")).isEqualTo("a~20b~2F~2E~2E~2Fc~2Ed~7E~25");
    assertThat(KeyLayout.encode("..")).isEqualTo("~2E~2E");
    assertThat(KeyLayout.encode("ü✓")).isEqualTo("~C3~BC~E2~9C~93");
    for (String n : List.of("x'); DROP TABLE leases; --", "{tag}:*?[brace]", " lead", "trail ",
        "..", "a/../../b", "%2e%2e", "%20")) {
      String e = KeyLayout.encode(n);
      assertThat(e).as(n).matches("[A-Za-z0-9_~-]+").doesNotContain("..");
    }
  }

  @Test
  void theEncodingIsInjective() {
    Set<String> seen = new HashSet<>();
    List<String> names = List.of("a~20b", "a b", "a%20b", "A b", "a_b", "a-b", "a.b", "a~2Eb", "~",
        "~7E", "%7E");
    for (String n : names) {
      assertThat(seen.add(KeyLayout.encode(n))).as("%s collides", n).isTrue();
    }
  }

  @Test
  void badUrlsAndTimeoutsAreRejected() {
    for (String bad : new String[] {"127.0.0.1:8500", "ftp://h:1", "http://", "not a url",
        "http://u:p@h:8500", "http://h:8500/?x=1"}) {
      assertThatThrownBy(() -> ConsulLeaseStore.builder(bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("http://");
    }
    assertThatThrownBy(() -> ConsulLeaseStore.builder((String) null))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("url");
    assertThatThrownBy(() -> ConsulLeaseStore.builder("http://h:1").callTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("callTimeout");
    assertThatThrownBy(() -> ConsulLeaseStore.builder("http://h:1").callTimeout(Duration.ofHours(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shorter");
    assertThatThrownBy(() -> ConsulLeaseStore.builder("http://h:1").keyPrefix(null))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("keyPrefix");
  }

  @Test
  void recordsRoundTripAndForeignValuesAreNotOurs() {
    LeaseRecord r = new LeaseRecord(LeaseRecord.State.HELD, new dev.leases.HolderId("h/1/ab=c"),
        "sess", Duration.ofSeconds(7), 1234L);
    assertThat(LeaseRecord.parse(r.encode())).isEqualTo(r);
    for (String foreign : new String[] {null, "", "junk", "leases/1\nstate=held", "leases/1\n"
        + "state=gone\nholder=h\nsession=s\nttl-ms=1000\nstamp=1",
        "leases/1\nstate=held\nholder=\nsession=s\nttl-ms=1000\nstamp=1"}) {
      assertThat(LeaseRecord.parse(foreign)).as(String.valueOf(foreign)).isNull();
    }
  }

  @Test
  void goDurationsParse() {
    assertThat(GoDuration.parse("10s")).hasValue(Duration.ofSeconds(10));
    assertThat(GoDuration.parse("1m30s")).hasValue(Duration.ofSeconds(90));
    assertThat(GoDuration.parse("1500ms")).hasValue(Duration.ofMillis(1500));
    assertThat(GoDuration.parse("1.5s")).hasValue(Duration.ofMillis(1500));
    assertThat(GoDuration.parse("24h0m0s")).hasValue(Duration.ofHours(24));
    assertThat(GoDuration.parse("")).isEmpty();
    assertThat(GoDuration.parse("0s")).isEmpty();
    assertThat(GoDuration.parse("10")).isEmpty();
    assertThat(GoDuration.parse("s")).isEmpty();
  }
}
