package dev.leases;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class LeaseListingTest {

  @Test
  void codePointOrderIsTheOrderOfUtf8Bytes() {
    List<String> names = new ArrayList<>(List.of("a\uD83D\uDE00", "a\uFF5E", "a", "", "B", "ab",
        "a\uD83D\uDE01", "\u00E9", "a\u0000"));
    List<String> byBytes = new ArrayList<>(names);
    byBytes.sort((x, y) -> Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8),
        y.getBytes(StandardCharsets.UTF_8)));
    names.sort(LeaseListing.CODE_POINT_ORDER);
    assertThat(names).containsExactlyElementsOf(byBytes);
    assertThat(names.indexOf("a\uFF5E")).isLessThan(names.indexOf("a\uD83D\uDE00"));
  }

  @Test
  void argumentsAreCheckedWithTheRange() {
    assertThat(LeaseListing.requireListing("", 1)).isEmpty();
    assertThat(LeaseListing.requireListing(" job", LeaseListing.MAX_LIMIT)).isEqualTo(" job");
    assertThatThrownBy(() -> LeaseListing.requireListing("a", -1))
        .hasMessage("limit must be 1 to 10000 names, got -1");
    assertThatThrownBy(() -> LeaseListing.requireListing("a\tb", 5))
        .hasMessageContaining("control characters (found U+0009 at index 1)");
  }
}
