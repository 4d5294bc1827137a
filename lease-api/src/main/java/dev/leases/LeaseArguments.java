package dev.leases;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Validation shared by every store, so that bad input gets the same clear message everywhere.
 * Every method throws {@link IllegalArgumentException} (or {@link NullPointerException} for null)
 * with a message that says what to change.
 */
public final class LeaseArguments {

  /** Longest accepted lease name, so that every backend can use it as a key or column value. */
  public static final int MAX_NAME_LENGTH = 200;

  private LeaseArguments() {}

  /**
   * Checks a lease name: 1 to {@value #MAX_NAME_LENGTH} characters, not blank, no control characters,
   * well-formed UTF-16 (no unpaired surrogate). Any other character is allowed: stores must treat the
   * name as data, never as syntax.
   */
  public static String requireName(String name) {
    return requireText("lease name", name, MAX_NAME_LENGTH);
  }

  /**
   * Checks the names and the holder of one batch call ({@link LeaseStore#acquireOrRenewAll},
   * {@link LeaseStore#releaseAll}) before anything is sent: the holder not null; at most
   * {@value LeaseStore#MAX_BATCH_SIZE} names, each valid as for {@link #requireName}, none repeated
   * (a result map holds one outcome per name, so a repeat is refused rather than silently merged).
   * An empty collection is allowed.
   *
   * @return the names in the caller's iteration order, copied: changing the collection afterwards
   *     changes nothing
   */
  public static List<String> requireNames(Collection<String> names, HolderId holder) {
    Objects.requireNonNull(names, "names must not be null");
    Objects.requireNonNull(holder, "holder must not be null");
    if (names.size() > LeaseStore.MAX_BATCH_SIZE) {
      throw new IllegalArgumentException("a batch of " + names.size() + " names is above the limit of "
          + LeaseStore.MAX_BATCH_SIZE + " (LeaseStore.MAX_BATCH_SIZE); split it into calls of at most "
          + LeaseStore.MAX_BATCH_SIZE + " names");
    }
    List<String> copy = new ArrayList<>(names);
    Map<String, Integer> seen = new HashMap<>();
    for (int i = 0; i < copy.size(); i++) {
      String name = copy.get(i);
      int index = i;
      Objects.requireNonNull(name, () -> "names[" + index + "]: lease name must not be null");
      try {
        requireName(name);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("names[" + i + "]: " + e.getMessage()
            + "; nothing in this batch was sent", e);
      }
      Integer first = seen.putIfAbsent(name, i);
      if (first != null) {
        throw new IllegalArgumentException("names[" + i + "] repeats lease name '" + name
            + "' (also names[" + first + "]): pass each name once per batch; nothing in this batch"
            + " was sent");
      }
    }
    return copy;
  }

  /**
   * Checks any text that a store turns into bytes (a name, a holder id, a key, a resource or table
   * name): 1 to {@code maxLength} characters, not blank, no control characters, and well-formed
   * UTF-16. An unpaired surrogate has no UTF-8 encoding: Java writes it as {@code ?}, so two distinct
   * strings would become one key, one row or one holder.
   *
   * @param what how the message names the value, e.g. {@code "fence resource"}
   */
  public static String requireText(String what, String value, int maxLength) {
    Objects.requireNonNull(value, () -> what + " must not be null");
    if (value.isBlank()) {
      throw new IllegalArgumentException(what + " must not be blank");
    }
    if (value.length() > maxLength) {
      throw new IllegalArgumentException(
          what + " is " + value.length() + " characters long; the limit is " + maxLength);
    }
    return requireWellFormed(what, requireNoControlCharacters(what, value));
  }

  /** Rejects control characters (U+0000 to U+001F, U+007F to U+009F), naming the first. */
  static String requireNoControlCharacters(String what, String value) {
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i))) {
        throw new IllegalArgumentException(
            what + " must not contain control characters (found U+"
                + String.format("%04X", (int) value.charAt(i)) + " at index " + i + ")");
      }
    }
    return value;
  }

  /**
   * Checks that {@code value} is well-formed UTF-16: every high surrogate is followed by a low one
   * and every low surrogate follows a high one. Such strings encode to UTF-8 and back unchanged;
   * others do not (an unpaired surrogate becomes {@code ?}), so distinct strings would collide.
   */
  public static String requireWellFormed(String what, String value) {
    Objects.requireNonNull(value, () -> what + " must not be null");
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
          i++;
          continue;
        }
        throw unpaired(what, c, i);
      }
      if (Character.isLowSurrogate(c)) {
        throw unpaired(what, c, i);
      }
    }
    return value;
  }

  private static IllegalArgumentException unpaired(String what, char c, int index) {
    return new IllegalArgumentException(what + " is not well-formed UTF-16: unpaired surrogate U+"
        + String.format("%04X", (int) c) + " at index " + index + " has no UTF-8 encoding and would"
        + " collide with other text; pass a complete character (a high surrogate followed by a low"
        + " one) or remove it");
  }

  /** Checks a positive, non-null TTL (range checks are {@link TtlRange#check(Duration)}). */
  public static Duration requirePositive(String what, Duration value) {
    Objects.requireNonNull(value, () -> what + " must not be null");
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, was " + value);
    }
    return value;
  }

  /**
   * Checks a call timeout: positive and at most {@code max}. A lease call that needs longer is
   * already lost, and a holder must learn of trouble while its lease still runs.
   */
  public static Duration requireTimeout(String what, Duration value, Duration max) {
    requirePositive(what, value);
    if (value.compareTo(max) > 0) {
      throw new IllegalArgumentException(what + " " + value + " is above the limit " + max
          + "; choose a shorter one, well below the TTLs you use");
    }
    return value;
  }
}
