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
  void theListingIsFoundThroughDecorators() {
    dev.leases.memory.InMemoryLeaseStore memory = new dev.leases.memory.InMemoryLeaseStore();
    LeaseStore wrapped = new dev.leases.spi.ForwardingLeaseStore(
        new dev.leases.spi.ForwardingLeaseStore(memory) {}) {};
    assertThat(LeaseListing.of(memory)).containsSame(memory);
    assertThat(LeaseListing.of(wrapped)).containsSame(memory);
    LeaseStore unlisted = new dev.leases.spi.ForwardingLeaseStore(new NotListing()) {};
    assertThat(LeaseListing.of(unlisted)).isEmpty();
    assertThat(LeaseListing.of(new NotListing())).isEmpty();
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

  /** A store with no listing; no call is made on it. */
  private static final class NotListing implements LeaseStore {
    @Override
    public java.util.Optional<LeaseGrant> acquireOrRenew(String n, HolderId h, java.time.Duration t) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean release(String name, HolderId holder) {
      throw new UnsupportedOperationException();
    }

    @Override
    public java.util.OptionalLong token(String name) {
      throw new UnsupportedOperationException();
    }

    @Override
    public LeaseState inspect(String name) {
      throw new UnsupportedOperationException();
    }

    @Override
    public TtlRange ttlRange() {
      throw new UnsupportedOperationException();
    }

    @Override
    public Subscription onRelease(String name, Runnable listener) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void close() {}
  }
}
