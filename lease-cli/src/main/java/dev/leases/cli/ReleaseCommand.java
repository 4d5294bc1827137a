package dev.leases.cli;

import dev.leases.HolderId;
import dev.leases.LeaseState;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code leases release NAME --force}: an operator's forced release. Reads the holder with
 * {@code inspect}, then releases <em>as that holder</em>, so that a lease that changed hands in
 * between is left alone (the release answers false: exit 1).
 *
 * <p>Races: between the read and the release the same holder may renew (same token: the tenure
 * printed is the one released) or lose and re-acquire (a new token: the state printed after the
 * release shows it). The released holder is not stopped: it may still be running and writing until
 * its own next renewal fails. Only a resource that checks fencing tokens rejects its writes once
 * someone else is granted the lease.
 */
@Command(name = "release", description = {
    "Force the release of NAME: read its holder, then release it as that holder. Requires --force.",
    "The holder is NOT stopped and may still be writing; only fencing tokens protect the resource.",
    "Exit 1 if nothing was held or the lease changed hands before the release."})
final class ReleaseCommand extends NamedCommand {

  @Option(names = "--force", description = "Required: you are overriding a live holder.")
  boolean force;

  @Option(names = "--holder", paramLabel = "ID",
      description = "Release only if ID (as inspect printed it) holds the lease.")
  @Nullable String expectedHolder;

  @Override
  int run(StoreOptions.Opened store, Output output) {
    String n = name();
    if (!force) {
      throw new CliException(ExitCodes.USAGE, "release overrides a live holder: pass --force to"
          + " release " + n + " (and make sure its resource checks fencing tokens)");
    }
    LeaseState before = store.store().inspect(n);
    if (!(before instanceof LeaseState.Held held)) {
      throw new CliException(ExitCodes.REFUSED, n + " is " + before.status() + ", not held:"
          + " nothing to release" + (before instanceof LeaseState.Expired
              ? " (its holder stopped renewing; the next acquirer takes it over)" : ""));
    }
    HolderId holder = held.holder();
    if (expectedHolder != null && !expectedHolder.equals(holder.value())) {
      throw new CliException(ExitCodes.REFUSED, n + " is held by " + holder.value() + ", not by "
          + expectedHolder + ": nothing released");
    }
    cli.err().println("warning: " + holder.value() + " is not stopped by this release and may still"
        + " be writing; only a resource that checks fencing tokens rejects its writes once the"
        + " lease is granted again (with a token above " + held.lastToken() + ").");
    cli.err().flush();
    if (!store.store().release(n, holder)) {
      throw new CliException(ExitCodes.REFUSED, holder.value() + " no longer held " + n
          + " when the release arrived (released, expired or taken over since the read):"
          + " nothing released; inspect it again");
    }
    LeaseState after = store.store().inspect(n);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("name", n);
    f.put("released", true);
    f.put("holder", holder.value());
    f.put("token", held.lastToken());
    f.put("now", Output.fields(after));
    output.print(f, "released " + n + " held by " + holder.value() + " with token "
        + held.lastToken() + "\nnow: " + Output.text(after));
    return ExitCodes.OK;
  }
}
