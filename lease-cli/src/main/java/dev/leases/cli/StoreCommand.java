package dev.leases.cli;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStoreUnavailableException;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * A command that opens a store, runs against it and closes it. Turns the library's exceptions into
 * {@link CliException}s with an exit code and a message saying what to change: a malformed name
 * into {@link ExitCodes#USAGE}, an unreachable or failing store into {@link ExitCodes#UNAVAILABLE}.
 */
abstract class StoreCommand implements Callable<Integer> {

  @Mixin
  StoreOptions storeOptions;

  @Option(names = "--json", description = "Print JSON (one object per line) instead of text.")
  boolean json;

  @ParentCommand
  LeasesCli cli;

  @Override
  public final Integer call() {
    refuseBackend(storeOptions.backend);
    StoreOptions.Opened opened = storeOptions.open(cli.env());
    try (opened) {
      return run(opened, new Output(cli.out(), json));
    } catch (LeaseStoreUnavailableException e) {
      if (sqlState(e, "42P01")) { // undefined_table
        throw new CliException(ExitCodes.REFUSED, "the " + opened.description() + ": the table"
            + " does not exist in this database (the CLI never creates it): check --url and"
            + " --table", e);
      }
      throw new CliException(ExitCodes.UNAVAILABLE, "the " + opened.description()
          + " did not answer: " + opened.secrets().redact(rootMessage(e))
          + "\nCheck --url/--endpoints, that the server runs and accepts connections from here,"
          + " and the credentials; or raise --timeout (now " + storeOptions.timeoutMillis
          + " ms). The outcome of the call is unknown.", e);
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, opened.secrets().redact(e.getMessage()), e);
    }
  }

  /**
   * Throws a {@link CliException} if the command cannot run on {@code backend} at all; called
   * before the store is opened, so nothing is sent. Every backend by default.
   */
  void refuseBackend(StoreOptions.Backend backend) {}

  /** Runs the command on an open store; returns the exit code. */
  abstract int run(StoreOptions.Opened store, Output output);

  /** {@code name} if it is a valid lease name, else a {@link CliException} for usage. */
  static String leaseName(String name) {
    try {
      return LeaseArguments.requireName(name);
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, "NAME: " + e.getMessage());
    }
  }

  private static boolean sqlState(Throwable e, String state) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof SQLException sql && state.equals(sql.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  private static String rootMessage(Throwable e) {
    StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
    Throwable c = e.getCause();
    for (int depth = 0; c != null && depth < 5; depth++, c = c.getCause()) {
      if (c.getMessage() != null && !b.toString().contains(c.getMessage())) {
        b.append(" <- ").append(c.getMessage());
      }
    }
    return b.toString();
  }
}
