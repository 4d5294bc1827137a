package dev.leases.cli;

import dev.leases.LeaseListing;
import java.util.List;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code leases list [PREFIX]}: the names the store lists ({@link LeaseListing}) and the state of
 * each. A store that does not implement the listing is refused with exit 1.
 */
@Command(name = "list", description = {
    "List lease names starting with PREFIX (or --prefix; default: every name),",
    "smallest first in code-point order, and the state of each, read one by one",
    "after the names. PostgreSQL, etcd and Consul also list names released or",
    "expired while they keep a record of them; Redis lists the names held now",
    "(it keeps nothing of a released name) and scans its whole keyspace for them."})
final class ListCommand extends StoreCommand {

  @Parameters(index = "0", arity = "0..1", paramLabel = "PREFIX",
      description = "Only names starting with PREFIX (literal text, not a pattern).")
  @Nullable String positionalPrefix;

  @Option(names = "--prefix", paramLabel = "P", description = "The same as PREFIX.")
  @Nullable String prefix;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "1000",
      description = "At most N names, the smallest (1 to " + LeaseListing.MAX_LIMIT
          + ", default ${DEFAULT-VALUE}).")
  int limit;

  @Override
  int run(StoreOptions.Opened store, Output output) {
    if (positionalPrefix != null && prefix != null) {
      throw new CliException(ExitCodes.USAGE, "give the prefix once: as PREFIX or as --prefix");
    }
    String p = positionalPrefix != null ? positionalPrefix : prefix != null ? prefix : "";
    try {
      LeaseListing.requireListing(p, limit);
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, (prefix != null ? "--prefix" : "PREFIX")
          + " or --limit: " + e.getMessage());
    }
    LeaseListing listing = LeaseListing.of(store.store()).orElseThrow(() ->
        new CliException(ExitCodes.REFUSED, "the " + store.description() + " cannot list lease"
          + " names (its store does not implement LeaseListing). Use inspect NAME with a"
          + " name you know."));
    List<String> names = listing.names(p, limit);
    if (names.isEmpty()) {
      cli.err().println("leases: no lease name starts with '" + p + "' in the "
          + store.description() + " (if you expected some, check --table or --key-prefix)");
      cli.err().flush();
    }
    for (String name : names) {
      output.state(store.store().inspect(name));
    }
    return ExitCodes.OK;
  }
}
