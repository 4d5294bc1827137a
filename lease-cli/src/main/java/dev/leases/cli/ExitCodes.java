package dev.leases.cli;

/**
 * The CLI's exit codes, stable for scripts: {@link #OK} 0, {@link #REFUSED} 1, {@link #USAGE} 2,
 * {@link #UNAVAILABLE} 3.
 */
public final class ExitCodes {

  /** The command did what it was asked. */
  public static final int OK = 0;
  /**
   * Not found or refused: no token known ({@code token}), nothing held to release, a release that
   * lost a race, a store that cannot list names (one that does not implement
   * {@link dev.leases.LeaseListing}).
   */
  public static final int REFUSED = 1;
  /**
   * Bad command line: unknown command or store, a malformed lease name, a missing option, or a
   * command the chosen store cannot serve at all ({@code history} on postgres, redis or consul,
   * which keep no history; only etcd does), refused before anything is sent.
   */
  public static final int USAGE = 2;
  /** The store did not answer in time or answered with an error; the outcome is unknown. */
  public static final int UNAVAILABLE = 3;

  private ExitCodes() {}
}
