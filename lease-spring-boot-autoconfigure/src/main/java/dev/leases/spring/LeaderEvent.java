package dev.leases.spring;

import dev.leases.leader.LossReason;
import java.util.Objects;
import org.springframework.context.ApplicationEvent;

/**
 * Leadership of a configured leader loop changed. Published from the loop's listener thread (never
 * the renewal path), in the order the changes happened. By the time a listener runs, the state it
 * reports may be out of date: read {@link LeaderLoops#get(String)}{@code .currentToken()} when work
 * starts, and carry the token to a fenced resource.
 */
public abstract sealed class LeaderEvent extends ApplicationEvent
    permits LeaderEvent.Acquired, LeaderEvent.Lost {

  private final String lease;
  private final long token;

  LeaderEvent(Object source, String lease, long token) {
    super(source);
    this.lease = Objects.requireNonNull(lease, "lease");
    this.token = token;
  }

  /** The lease name. */
  public String lease() {
    return lease;
  }

  /** The fencing token of the tenure that began or ended. */
  public long token() {
    return token;
  }

  /** This process became leader of {@link #lease()} with {@link #token()} a moment ago. */
  public static final class Acquired extends LeaderEvent {
    /** An event from {@code source}. */
    public Acquired(Object source, String lease, long token) {
      super(source, lease, token);
    }
  }

  /** This process stopped leading {@link #lease()}; work under {@link #token()} must stop. */
  public static final class Lost extends LeaderEvent {
    private final LossReason reason;

    /** An event from {@code source}, with why leadership ended. */
    public Lost(Object source, String lease, long token, LossReason reason) {
      super(source, lease, token);
      this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** Why leadership ended. */
    public LossReason reason() {
      return reason;
    }
  }
}
