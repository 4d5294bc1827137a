package dev.leases;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ValuesTest {

  @Test
  void generatedHolderIdsAreFreshPerCallAndReadable() {
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    assertThat(a).isNotEqualTo(b);
    assertThat(a.value()).contains("/" + ProcessHandle.current().pid() + "/");
    assertThat(a.value().length()).isLessThanOrEqualTo(HolderId.MAX_LENGTH);
  }

  @Test
  void holderIdsAreValidated() {
    assertThatThrownBy(() -> new HolderId(" ")).hasMessageContaining("holder id must not be blank");
    assertThatThrownBy(() -> new HolderId("x".repeat(201))).hasMessageContaining("limit is 200");
    assertThatThrownBy(() -> new HolderId("a\tb")).hasMessageContaining("control characters");
  }

  @Test
  void malformedUtf16IsRefusedInNamesAndHolders() {
    for (String bad : new String[] {"c\uD800x", "c\uDC00x", "w\uD800", "\uDC00\uD800", "x\uDBFF"}) {
      assertThatThrownBy(() -> LeaseArguments.requireName(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease name is not well-formed UTF-16")
          .hasMessageContaining("unpaired surrogate U+");
      assertThatThrownBy(() -> new HolderId(bad))
          .hasMessageContaining("holder id is not well-formed UTF-16");
      assertThatThrownBy(() -> dev.leases.spi.KeyText.percentEncode(bad, ""))
          .hasMessageContaining("not well-formed UTF-16");
    }
    assertThat(LeaseArguments.requireName("c\uD83D\uDE00x")).isEqualTo("c\uD83D\uDE00x");
    assertThat(new HolderId("w\uD83D\uDE00").value()).isEqualTo("w\uD83D\uDE00");
    assertThat(LeaseArguments.requireText("fence resource", "r\uD83D\uDE00", 10))
        .isEqualTo("r\uD83D\uDE00");
  }

  @Test
  void ttlRangeNamesItselfWhenItRefuses() {
    TtlRange r = new TtlRange(Duration.ofSeconds(1), Duration.ofMinutes(5), Duration.ofSeconds(1));
    assertThat(r.check(Duration.ofSeconds(1))).isEqualTo(Duration.ofSeconds(1));
    assertThatThrownBy(() -> r.check(Duration.ofMillis(999)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[PT1S, PT5M] in steps of PT1S");
    assertThat(r.roundUp(Duration.ofMillis(1500))).isEqualTo(Duration.ofSeconds(2));
    assertThat(r.roundUp(Duration.ofSeconds(2))).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void grantsRefuseNonPositiveTokens() {
    assertThatThrownBy(() -> new LeaseGrant("n", HolderId.generate(), 0,
        java.time.Instant.EPOCH, Duration.ofSeconds(1))).hasMessageContaining("positive");
  }

  @Test
  void fencedOutExceptionSaysWhatHappened() {
    FencedOutException e = new FencedOutException("invoice-run", 7, 8);
    assertThat(e).hasMessageContaining("token 7").hasMessageContaining("token 8")
        .hasMessageContaining("must stop");
    assertThat(e.highestToken()).isEqualTo(8);
  }
}
