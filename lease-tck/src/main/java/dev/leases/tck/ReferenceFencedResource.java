package dev.leases.tck;

import dev.leases.FencedOutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The reference fenced resource: accepts a write whose token is {@code >=} the highest it has
 * accepted (one leader may write several times under one token) and rejects a lower one with
 * {@link FencedOutException}, changing nothing. The backends' fenced-write helpers implement the
 * same rule against real stores; this one is what the kit's pause scenarios write to.
 *
 * @param <T> the value written
 */
public final class ReferenceFencedResource<T> {

  /** One accepted write. */
  public record Write<T>(long token, T value) {}

  private final String name;
  private final List<Write<T>> accepted = new ArrayList<>();
  private long highest;
  private int rejected;

  /** An empty resource named {@code name} that has accepted no token yet. */
  public ReferenceFencedResource(String name) {
    this.name = Objects.requireNonNull(name, "name");
  }

  /**
   * Writes {@code value} under {@code token}.
   *
   * @throws FencedOutException if a higher token has already written; nothing changes then
   * @throws IllegalArgumentException for a token {@code <= 0} (0 means "not leader")
   */
  public synchronized void write(long token, T value) {
    if (token <= 0) {
      throw new IllegalArgumentException("token " + token + " is not a fencing token: a holder that"
          + " is not leader (token 0) must not write");
    }
    if (token < highest) {
      rejected++;
      throw new FencedOutException(name, token, highest);
    }
    highest = token;
    accepted.add(new Write<>(token, value));
  }

  /** The highest token accepted so far, 0 if none. */
  public synchronized long highestToken() {
    return highest;
  }

  /** Every accepted write, in order. */
  public synchronized List<Write<T>> acceptedWrites() {
    return List.copyOf(accepted);
  }

  /** How many writes were refused as stale. */
  public synchronized int rejectedCount() {
    return rejected;
  }
}
