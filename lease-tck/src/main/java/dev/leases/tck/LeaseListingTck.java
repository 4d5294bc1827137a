package dev.leases.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseListing;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.TtlRange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The compatibility kit of {@link LeaseListing}, the optional name listing: extend it with a
 * backend's store (which must implement {@link LeaseListing}) next to its {@link LeaseStoreTck}
 * subclass. Each scenario works under a prefix of its own, so a server shared with other tests is
 * fine. Names are held for a minute (or the store's longest TTL, if shorter) so that "held for the
 * whole call" holds on a loaded machine.
 */
public abstract class LeaseListingTck {

  /** A new client of the store under test (the kit closes it). */
  protected abstract LeaseStore newStore();

  private final List<LeaseStore> open = new ArrayList<>();

  @AfterEach
  void closeAll() {
    for (LeaseStore s : open) {
      try {
        s.close();
      } catch (RuntimeException e) {
        // closing anyway; the scenario's assertions decide
      }
    }
    open.clear();
  }

  private LeaseStore store() {
    LeaseStore s = newStore();
    open.add(s);
    return s;
  }

  private static LeaseListing listing(LeaseStore s) {
    assertThat(s).as("the store under test implements LeaseListing").isInstanceOf(LeaseListing.class);
    return (LeaseListing) s;
  }

  private static String prefix() {
    byte[] b = new byte[5];
    ThreadLocalRandom.current().nextBytes(b);
    return "tck-list-" + HexFormat.of().formatHex(b) + "/";
  }

  private static Duration ttl(LeaseStore s) {
    TtlRange r = s.ttlRange();
    Duration minute = r.roundUp(Duration.ofMinutes(1));
    return minute.compareTo(r.max()) > 0 ? r.max() : minute;
  }

  /** Acquires every name for one holder; they stay held until the scenario ends. */
  private static void hold(LeaseStore s, List<String> names) {
    HolderId holder = HolderId.generate();
    for (String n : names) {
      assertThat(s.acquireOrRenew(n, holder, ttl(s))).as("acquire %s", n).isPresent();
    }
  }

  @Test
  void heldNamesOfAnyHolderAreListedInCodePointOrder() {
    String p = prefix();
    // "B" before "a" (no locale collation); U+FF5E before U+1F600 (code points, not UTF-16 units)
    List<String> expected = List.of(p + "B", p + "a", p + "a\uFF5E", p + "a\uD83D\uDE00", p + "b");
    List<String> shuffled = new ArrayList<>(expected);
    Collections.shuffle(shuffled);
    hold(store(), shuffled);
    assertThat(listing(store()).names(p, LeaseListing.MAX_LIMIT))
        .as("listed by a second client").containsExactlyElementsOf(expected);
  }

  @Test
  void theLimitKeepsTheSmallestNames() {
    String p = prefix();
    List<String> names = List.of(p + "1", p + "2", p + "3", p + "4", p + "5");
    LeaseStore s = store();
    hold(s, names);
    assertThat(listing(s).names(p, 2)).containsExactly(p + "1", p + "2");
    assertThat(listing(s).names(p, 5)).containsExactlyElementsOf(names);
    assertThat(listing(s).names(p, 1)).containsExactly(p + "1");
  }

  @Test
  void thePrefixIsLiteralText() {
    String p = prefix();
    List<String> hostile = List.of("%x", "_x", "*x", "?x", "[x]", "\\x", "'x", "\"x", ".x", "x");
    LeaseStore s = store();
    hold(s, hostile.stream().map(h -> p + h).toList());
    for (String h : hostile) {
      String first = p + h.charAt(0);
      assertThat(listing(s).names(first, 100)).as("names starting with %s", first)
          .containsExactly(p + h);
    }
    assertThat(listing(s).names(p + "[x", 100)).containsExactly(p + "[x]");
    assertThat(listing(s).names(p + "x", 100)).containsExactly(p + "x");
  }

  @Test
  void aNameEqualToThePrefixIsListedWithTheNamesBelowIt() {
    String p = prefix();
    LeaseStore s = store();
    hold(s, List.of(p + "job", p + "job/1", p + "jo", p + "jobs"));
    assertThat(listing(s).names(p + "job", 100)).containsExactly(p + "job", p + "job/1", p + "jobs");
    assertThat(listing(s).names(p + "job/", 100)).containsExactly(p + "job/1");
  }

  @Test
  void namesNeverGrantedAreNotListed() {
    String p = prefix();
    LeaseStore s = store();
    s.token(p + "never"); // a read leaves no name behind
    s.inspect(p + "never");
    assertThat(listing(s).names(p, 100)).isEmpty();
  }

  @Test
  void aReleasedNameMayStayListedButTheHeldOnesAre() {
    String p = prefix();
    LeaseStore s = store();
    HolderId holder = HolderId.generate();
    assertThat(s.acquireOrRenew(p + "a", holder, ttl(s))).isPresent();
    assertThat(s.acquireOrRenew(p + "b", holder, ttl(s))).isPresent();
    assertThat(s.release(p + "a", holder)).isTrue();
    List<String> listed = listing(s).names(p, 100);
    assertThat(listed).contains(p + "b").isSubsetOf(p + "a", p + "b");
  }

  @Test
  void anEmptyPrefixListsEveryNameUpToTheLimitInOrder() {
    String p = prefix();
    LeaseStore s = store();
    hold(s, List.of(p + "x"));
    List<String> three = listing(s).names("", 3);
    assertThat(three).isNotEmpty().hasSizeLessThanOrEqualTo(3)
        .isSortedAccordingTo(LeaseListing.CODE_POINT_ORDER).doesNotHaveDuplicates();
  }

  @Test
  void badArgumentsAreRefusedWithWhatToChange() {
    LeaseListing l = listing(store());
    assertThatThrownBy(() -> l.names("a", 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 to " + LeaseListing.MAX_LIMIT);
    assertThatThrownBy(() -> l.names("a", LeaseListing.MAX_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 to " + LeaseListing.MAX_LIMIT);
    assertThatThrownBy(() -> l.names("c\uD800", 10)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("well-formed UTF-16");
    assertThatThrownBy(() -> l.names("c\uDC00x", 10)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("well-formed UTF-16");
    assertThatThrownBy(() -> l.names("c\u0000", 10)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("control characters");
    assertThatThrownBy(() -> l.names("x".repeat(LeaseArguments.MAX_NAME_LENGTH + 1), 10))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Integer.toString(LeaseArguments.MAX_NAME_LENGTH));
    assertThatThrownBy(() -> l.names(null, 10)).isInstanceOf(NullPointerException.class)
        .hasMessageContaining("prefix");
  }

  @Test
  void aClosedStoreRefusesToList() {
    LeaseStore s = newStore();
    s.close();
    assertThatThrownBy(() -> listing(s).names("", 10)).isInstanceOf(LeaseStoreClosedException.class);
  }
}
