package dev.leases.cli;

import dev.leases.etcd.EtcdLeaseHistory;
import dev.leases.etcd.EtcdLeaseStore;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code leases history NAME}: the lease's past changes, newest first, where the store keeps them.
 * Only etcd does ({@link EtcdLeaseStore#history}: every revision until compaction); on the other
 * stores the command is refused with {@link ExitCodes#USAGE} before anything is sent, saying so.
 *
 * <p>The history is a snapshot at one etcd revision (printed): a grant racing with the command is
 * not in it.
 */
@Command(name = "history", description = {
    "Print NAME's past changes, newest first (etcd only).",
    "Each grant (a new tenure and its token), rewrite, release and expiry,",
    "with the holder, token and etcd lease. etcd keeps every revision until",
    "compaction: what was compacted is gone, and the output says where it",
    "ends. On postgres, redis and consul the command exits 2. Ordinary",
    "renewals write nothing and are not shown."})
final class HistoryCommand extends NamedCommand {

  @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
      description = "At most N changes, the newest (1 to " + EtcdLeaseStore.MAX_HISTORY
          + ", default ${DEFAULT-VALUE}).")
  int limit;

  @Override
  void refuseBackend(StoreOptions.Backend backend) {
    String kept = switch (backend) {
      case etcd -> null;
      case postgres -> "one row per lease, updated in place";
      case redis -> "the current holder and a fence counter, nothing of a released lease";
      case consul -> "the current KV entry and its indexes, not its past values";
    };
    if (kept != null) {
      throw new CliException(ExitCodes.USAGE, "history: the " + backend + " store keeps no"
          + " history of a lease (only " + kept + "). etcd keeps one (every revision until"
          + " compaction): history works with --store etcd. Here, use inspect NAME for the state"
          + " and latest token, or watch NAME to follow changes from now on.");
    }
  }

  @Override
  int run(StoreOptions.Opened store, Output output) {
    String n = name();
    EtcdLeaseHistory h;
    try {
      h = ((EtcdLeaseStore) store.store()).history(n, limit); // checks the limit before sending
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, "--limit: " + e.getMessage());
    }
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("name", h.name());
    f.put("revision", h.revision());
    f.put("compactRevision", h.compactRevision());
    f.put("truncated", h.truncated());
    List<Map<String, Object>> changes = new ArrayList<>();
    for (EtcdLeaseHistory.Change c : h.changes()) {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("revision", c.revision());
      one.put("change", c.kind().name());
      one.put("holder", c.holder().value());
      one.put("token", c.token());
      one.put("etcdLeaseId", leaseId(c.etcdLeaseId())); // hex, as etcdctl shows it
      changes.add(one);
    }
    f.put("changes", changes);
    output.print(f, text(h));
    return ExitCodes.OK;
  }

  /** A table, newest first, between a heading and a line that says where the history ends. */
  private String text(EtcdLeaseHistory h) {
    StringBuilder b = new StringBuilder("history of " + h.name() + " at etcd revision "
        + h.revision() + ", newest first\n");
    if (h.changes().isEmpty()) {
      return b.append("(no change of ").append(h.name()).append(" on record: never granted, or"
          + " its keys were deleted by hand; check --key-prefix)").toString();
    }
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"REVISION", "CHANGE", "TOKEN", "ETCD LEASE", "HOLDER"});
    for (EtcdLeaseHistory.Change c : h.changes()) {
      String lease = leaseId(c.etcdLeaseId());
      rows.add(new String[] {Long.toString(c.revision()), c.kind().name(),
          Long.toString(c.token()), lease == null ? "-" : lease, c.holder().value()});
    }
    int[] widths = new int[4];
    for (String[] row : rows) {
      for (int i = 0; i < widths.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      for (int i = 0; i < widths.length; i++) {
        b.append(String.format("%-" + widths[i] + "s  ", row[i]));
      }
      b.append(row[4]).append('\n');
    }
    if (h.truncated()) {
      b.append("(the newest ").append(h.changes().size()).append(" changes; earlier ones exist:"
          + " raise --limit, up to ").append(EtcdLeaseStore.MAX_HISTORY).append(')');
    } else if (h.compactRevision() > 0) {
      b.append("(etcd compacted the revisions below ").append(h.compactRevision())
          .append(": earlier changes are gone)");
    } else {
      b.append("(complete: nothing earlier is on record)");
    }
    return b.toString();
  }

  private static @Nullable String leaseId(long id) {
    return id == 0 ? null : Long.toHexString(id);
  }
}
