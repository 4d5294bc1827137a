package dev.leases.micrometer;

/**
 * The names of every meter this module registers, in one place. Names follow Micrometer's
 * conventions (dot-separated, lower case; each registry renders them in its own style, e.g.
 * {@code leases_renewal_seconds} in Prometheus); times are recorded in base units; tags are low
 * cardinality: the lease, job or fence resource name, an operation, an outcome — never a holder id
 * or a token.
 */
public final class LeaseMeters {

  /** Gauge, 1 while a leader loop leads its lease, else 0. Tag {@code lease}. */
  public static final String LEADER = "leases.leader";

  /** Counter of tenures a leader loop began. Tag {@code lease}. */
  public static final String ACQUISITIONS = "leases.acquisitions";

  /** Counter of tenures a leader loop ended. Tags {@code lease}, {@code reason} (a LossReason). */
  public static final String LOSSES = "leases.losses";

  /**
   * Timer of acquire-or-renew calls to a store. Tags {@code lease}, {@code outcome}:
   * {@code granted}, {@code refused} (another holder has it) or {@code error}.
   */
  public static final String RENEWAL = "leases.renewal";

  /**
   * Counter of store calls that threw. Tags {@code operation} ({@code acquire_or_renew},
   * {@code release}, {@code token}, {@code inspect}), {@code exception} (simple class name).
   */
  public static final String STORE_ERRORS = "leases.store.errors";

  /**
   * Counter of fenced writes. Tags {@code resource}, {@code result}: {@code accepted},
   * {@code rejected} (fenced out: a higher token had written) or {@code error} (unknown outcome or
   * the work failed).
   */
  public static final String FENCE_WRITES = "leases.fence.writes";

  /**
   * Timer of exactly-once runs. Tags {@code job}, {@code outcome}: {@code completed},
   * {@code already_completed}, {@code running_elsewhere}, {@code failed} (the work threw),
   * {@code fenced_out} or {@code error} (store or ledger unavailable).
   */
  public static final String RUNS = "leases.runs";

  private LeaseMeters() {}
}
