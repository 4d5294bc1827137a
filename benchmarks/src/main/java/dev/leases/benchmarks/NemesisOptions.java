package dev.leases.benchmarks;

import dev.leases.benchmarks.NemesisSchedule.FaultType;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/** The {@code nemesis} command's options; backend options are those of {@link BenchOptions}. */
final class NemesisOptions {

  static final String USAGE = String.join("\n",
      "usage: java -jar leases-benchmarks.jar nemesis --changes N [options]",
      "",
      "Per backend, K worker JVMs run a LeaderLoop on one lease and do fenced units of work (read the",
      "token once, write, work, write again with it) against the reference fenced resource, while a",
      "seeded random schedule injects faults until N leadership changes have been seen. A checker",
      "then reads the grants and the resource's writes and reports every violation.",
      "",
      "  --changes N            leadership changes to observe per backend (required)",
      "  --seed S               schedule seed (default: random; printed, reuse it to replay)",
      "  --backends LIST        from: " + String.join(", ", Backends.names()) + " (default memory)",
      "  --start-local          start installed servers (redis-server, etcd, consul) on loopback",
      "  --ttl-ms T             lease TTL (default 1000; raised to a store's minimum)",
      "  --workers K            worker JVMs, 3 to 5 (default 4)",
      "  --lanes L              fault lanes running at once, each on its own worker (store faults",
      "                         one at a time), 1 to workers - 1 (default 2)",
      "  --work-ms N            the pause inside a unit of work (default 20)",
      "  --faults LIST          fault types (default all): " + String.join(",", labels()),
      "                         (store: the backend's store faults, where the harness started the",
      "                         servers: etcd and Consul 3-member clusters with leader-kill and",
      "                         member-kill, Redis store-restart and replica-promotion, PostgreSQL",
      "                         store-restart)",
      "  --max-seconds S        stop after S seconds per backend even before N changes (no error);",
      "                         without it the cap is 60 s + N x (5 x TTL + 4 s), and hitting it",
      "                         is a measurement failure",
      "  --out DIR              worker logs and clock files (default reports/nemesis-<timestamp>)",
      "  --postgres-url, --redis-uri, --etcd-endpoints, --consul-url   as for bench",
      "  --help                 this text",
      "",
      "Clock faults (snapshot, clock-step) need libfaketime (apt-get install -y faketime); the run",
      "checks at start-up that it moves both clocks, and fails with a message if it does not.",
      "",
      "Per backend, also: nemesis: <backend> faults by type: <label> <count>, ...",
      "and: nemesis: <backend> rate <changes per minute> changes/min over <seconds> s",
      "Last line per backend:",
      "  nemesis: <backend> changes <N> faults <F> accepted <A> rejected <R> violations <V>"
          + " max-recovery <seconds>",
      "Exit status: 0 no violation; 1 a violation; 2 bad usage or a backend that cannot be",
      "included; 3 a measurement failure (no recovery after a fault, the time cap, a broken fault).");

  private static final Set<String> OWN = Set.of("--changes", "--seed", "--workers", "--lanes",
      "--faults", "--max-seconds", "--ttl-ms", "--work-ms", "--out");

  int changes;
  long seed = new SecureRandom().nextLong();
  int workers = 4;
  int lanes = 2;
  long ttlMs = 1000;
  long workMs = 20;
  List<FaultType> faults = List.of(FaultType.values());
  long maxSeconds; // 0: derived from changes, and a failure when hit
  Path out;
  boolean help;
  BenchOptions stores;

  static List<String> labels() {
    return Arrays.stream(FaultType.values()).map(t -> t.label).toList();
  }

  static NemesisOptions parse(String[] args) {
    NemesisOptions o = new NemesisOptions();
    List<String> rest = new ArrayList<>();
    boolean backends = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int eq = a.indexOf('=');
      String key = a.startsWith("--") && eq > 0 ? a.substring(0, eq) : a;
      if (key.equals("--help") || key.equals("-h")) {
        o.help = true;
        continue;
      }
      if (!OWN.contains(key)) {
        backends |= key.equals("--backends");
        rest.add(a);
        continue;
      }
      String value;
      if (eq > 0 && a.startsWith("--")) {
        value = a.substring(eq + 1);
      } else if (i + 1 < args.length) {
        value = args[++i];
      } else {
        throw new IllegalArgumentException("option " + key + " needs a value");
      }
      switch (key) {
        case "--changes" -> o.changes = BenchOptions.positive(key, value);
        case "--seed" -> {
          try {
            o.seed = Long.parseLong(value.trim());
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--seed needs a whole number, got '" + value + "'");
          }
        }
        case "--workers" -> {
          o.workers = BenchOptions.positive(key, value);
          if (o.workers < 3 || o.workers > 5) {
            throw new IllegalArgumentException("--workers must be 3 to 5, got " + o.workers);
          }
        }
        case "--lanes" -> o.lanes = BenchOptions.positive(key, value);
        case "--faults" -> o.faults = faultTypes(value);
        case "--max-seconds" -> o.maxSeconds = BenchOptions.positive(key, value);
        case "--ttl-ms" -> o.ttlMs = BenchOptions.positive(key, value);
        case "--work-ms" -> o.workMs = BenchOptions.positive(key, value);
        case "--out" -> o.out = Path.of(value);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    o.stores = BenchOptions.parse(rest.toArray(String[]::new));
    if (!backends) {
      o.stores.backends = List.of("memory");
    }
    if (o.lanes >= o.workers) {
      throw new IllegalArgumentException("--lanes must be less than --workers (" + o.workers
          + "), got " + o.lanes + ": a lane holds one worker, and one must be left to lead");
    }
    if (!o.help && o.changes == 0) {
      throw new IllegalArgumentException("--changes N is required");
    }
    return o;
  }

  private static List<FaultType> faultTypes(String value) {
    List<FaultType> out = new ArrayList<>();
    for (String s : value.split(",")) {
      String t = s.trim().equals("store-restart") ? "store" : s.trim(); // its name before 0.1
      if (t.isEmpty()) {
        continue;
      }
      FaultType f = Arrays.stream(FaultType.values()).filter(x -> x.label.equals(t)).findFirst()
          .orElseThrow(() -> new IllegalArgumentException("--faults: unknown '" + t
              + "'; choose from " + labels()));
      if (!out.contains(f)) {
        out.add(f);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException("--faults needs at least one of " + labels());
    }
    return out;
  }

  /** The time cap per backend, and whether hitting it is a failure. */
  long capSeconds(long ttlMs) {
    return maxSeconds > 0 ? maxSeconds : 60 + changes * (5 * ttlMs / 1000 + 4);
  }
}
