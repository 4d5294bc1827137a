package dev.leases.leader;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStore;
import java.time.Duration;

/**
 * The timing rules a leader loop and a lease group share, validated in one place: renew at most
 * every {@code ttl/3} (room for two failed renewals), stand down {@code margin} before the promised
 * expiry with {@code margin + 2 x renewInterval < ttl}, a clock-jump tolerance, a call timeout.
 * Null arguments take the defaults ({@code ttl/3}, {@code ttl/10}, the margin, the renew interval).
 */
record Timings(Duration ttl, Duration renewInterval, Duration standDownMargin,
    Duration clockJumpTolerance, Duration callTimeout) {

  static Timings validate(LeaseStore store, Duration ttl, Duration renewInterval,
      Duration standDownMargin, Duration clockJumpTolerance, Duration callTimeout) {
    if (ttl == null) {
      throw new IllegalArgumentException("ttl is required: call ttl(Duration) on the builder");
    }
    LeaseArguments.requirePositive("ttl", ttl);
    store.ttlRange().check(ttl);
    Duration renew = renewInterval != null ? renewInterval : ttl.dividedBy(3);
    LeaseArguments.requirePositive("renewInterval", renew);
    if (renew.multipliedBy(3).compareTo(ttl) > 0) {
      throw new IllegalArgumentException("renewInterval " + renew + " leaves room for fewer than"
          + " two failed renewals within ttl " + ttl + "; use at most ttl/3 (" + ttl.dividedBy(3)
          + ")");
    }
    Duration margin = standDownMargin != null ? standDownMargin : ttl.dividedBy(10);
    LeaseArguments.requirePositive("standDownMargin", margin);
    if (margin.plus(renew.multipliedBy(2)).compareTo(ttl) >= 0) {
      throw new IllegalArgumentException("standDownMargin " + margin + " is too large for ttl "
          + ttl + " and renewInterval " + renew + ": margin + 2 x renewInterval must stay below"
          + " the ttl");
    }
    Duration jump = clockJumpTolerance != null ? clockJumpTolerance : margin;
    LeaseArguments.requirePositive("clockJumpTolerance", jump);
    Duration timeout = callTimeout != null ? callTimeout : renew;
    LeaseArguments.requirePositive("callTimeout", timeout);
    return new Timings(ttl, renew, margin, jump, timeout);
  }
}
