package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** No server needed: how the listing reads names back from lease keys, and its SCAN pattern. */
class ListingKeysTest {

  private final KeyLayout keys = new KeyLayout("p:q");

  /** Every name's lease key reads back as the name, hostile names included. */
  @Test
  void aLeaseKeyReadsBackAsItsName() {
    for (String n : List.of("plain", "a b", "{x}", "a:b", "*?[]\\", "%41", "ünï ✓ 漢字",
        "emoji \uD83D\uDE00", "once/job", "~._-", "x".repeat(200))) {
      assertThat(keys.nameOfLeaseKey(keys.leaseKey(n))).as(n).isEqualTo(n);
    }
  }

  /** Keys that are not this prefix's lease keys, or not written by {@code encode}, are no names. */
  @Test
  void otherKeysAreNoNames() {
    for (String k : List.of("{p:q:x}:fence", "{p:q:x}:last", "{p:q:x}:ledger:seq",
        "{p:q:r:x}:lease", "{p:x}:lease", "{p:qx}:lease", "{p:q:}:lease", "p:q:x:lease",
        "{p:q:%41}:lease", "{p:q:%2a}:lease", "{p:q:%2}:lease", "{p:q:%}:lease",
        "{p:q:%FF}:lease", "{p:q:%C3}:lease", "{p:q:%ED%A0%80}:lease", "{p:q:%C0%AF}:lease",
        "{p:q:%09}:lease", "{p:q:%20}:lease", "{p:q:ü}:lease", "{p:q:a b}:lease",
        "{p:q:x}:lease}:lease", "{p:q:{x}:lease", "{p:q:" + "x".repeat(201) + "}:lease")) {
      assertThat(keys.nameOfLeaseKey(k)).as(k).isNull();
    }
  }

  @Test
  void thePatternIsTheEncodedPrefixThenOneStar() {
    assertThat(keys.leaseKeyPattern("")).isEqualTo("{p:q:*}:lease");
    assertThat(keys.leaseKeyPattern("job*/[1]?\\")).isEqualTo("{p:q:job%2A/%5B1%5D%3F%5C*}:lease");
    assertThat(KeyLayout.globLiteral("a*b?c[d]e\\f{g}")).isEqualTo("a\\*b\\?c\\[d\\]e\\\\f{g}");
  }
}
