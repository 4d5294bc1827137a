package dev.leases.cli;

import picocli.CommandLine.Parameters;

/** A command on one lease, named by its first parameter. */
abstract class NamedCommand extends StoreCommand {

  @Parameters(index = "0", paramLabel = "NAME", description = "The lease name.")
  String name;

  /** The name, checked as every store checks it ({@link ExitCodes#USAGE} if malformed). */
  String name() {
    return leaseName(name);
  }
}
