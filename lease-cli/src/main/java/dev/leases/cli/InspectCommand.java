package dev.leases.cli;

import picocli.CommandLine.Command;

/** {@code leases inspect NAME}: the lease's state as the store reads it now. */
@Command(name = "inspect", description = {
    "Print the lease's state as the store reads it now: FREE, HELD (holder, token, expiry) or",
    "EXPIRED (its holder stopped renewing and nobody has taken it yet). Exit 0 whatever the state."})
final class InspectCommand extends NamedCommand {

  @Override
  int run(StoreOptions.Opened store, Output output) {
    output.state(store.store().inspect(name()));
    return ExitCodes.OK;
  }
}
