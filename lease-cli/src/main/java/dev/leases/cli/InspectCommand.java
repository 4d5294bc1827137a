package dev.leases.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code leases inspect NAME}: the lease's state as the store reads it now. */
@Command(name = "inspect", description = {
    "Print the lease's state as the store reads it now: FREE, HELD (holder, token, expiry) or",
    "EXPIRED (its holder stopped renewing and nobody has taken it yet). Exit 0 whatever the state."})
final class InspectCommand extends StoreCommand {

  @Parameters(index = "0", paramLabel = "NAME", description = "The lease name.")
  String name;

  @Override
  int run(StoreOptions.Opened store, Output output) {
    output.state(store.store().inspect(leaseName(name)));
    return ExitCodes.OK;
  }
}
