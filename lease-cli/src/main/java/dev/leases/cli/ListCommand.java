package dev.leases.cli;

import dev.leases.LeaseArguments;
import java.util.List;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code leases list [--prefix P]}: the names the store knows and the state of each. Only stores with
 * a {@link NameLister} can answer (PostgreSQL); the others are refused with exit 1.
 */
@Command(name = "list", description = {
    "List lease names (optionally those starting with --prefix) and the state of each, read one",
    "by one after the names. PostgreSQL only: Redis, etcd and Consul keep no index of names the",
    "CLI can read; there it exits 1."})
final class ListCommand extends StoreCommand {

  static final int MAX_LIMIT = 10_000;

  @Option(names = "--prefix", paramLabel = "P", description = "Only names starting with P.")
  @Nullable String prefix;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "1000",
      description = "At most N names (1 to " + MAX_LIMIT + ", default ${DEFAULT-VALUE}).")
  int limit;

  @Override
  int run(StoreOptions.Opened store, Output output) {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new CliException(ExitCodes.USAGE, "--limit must be 1 to " + MAX_LIMIT + ", got " + limit);
    }
    String p = prefix == null ? "" : prefixText(prefix);
    if (store.lister() == null) {
      throw new CliException(ExitCodes.REFUSED, "the " + store.description() + " cannot list"
          + " lease names: the store keeps no index the CLI can read (the LeaseStore SPI has no"
          + " listing call). Use inspect NAME with a name you know; listing works on --store"
          + " postgres.");
    }
    List<String> names = store.lister().names(p, limit);
    for (String name : names) {
      output.state(store.store().inspect(name));
    }
    return ExitCodes.OK;
  }

  private static String prefixText(String prefix) {
    try {
      return LeaseArguments.requireText("--prefix", prefix, LeaseArguments.MAX_NAME_LENGTH);
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage());
    }
  }
}
