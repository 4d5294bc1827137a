package dev.leases.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The {@code bench} command's options, parsed by hand ({@code --key value} or {@code --key=value}). */
final class BenchOptions {

  static final List<String> SCENARIOS = List.of("clean", "crash", "pause");
  static final List<String> PARTS = List.of("failover", "latency", "scale");

  static final String USAGE = String.join("\n",
      "usage: java -jar leases-benchmarks.jar bench [options]",
      "",
      "Measures, per backend: failover (clean close, SIGKILL, SIGSTOP past the TTL) with 3 peer JVMs",
      "doing fenced writes; latency of lease calls next to the store's plain write; renewal rounds",
      "for many leases in one process. Prints a table; writes Markdown, JSON and SVG to --out.",
      "",
      "backends:",
      "  --backends LIST        comma-separated, from: " + String.join(", ", Backends.names()),
      "                         (default: memory,postgres — nothing to install)",
      "  --start-local          start installed servers (redis-server, etcd) on free loopback ports",
      "  --postgres-url URL     JDBC URL with user/password   (default $LEASES_POSTGRES_URL, else embedded)",
      "  --redis-uri URI        redis://host:port              (default $LEASES_REDIS_URI)",
      "  --etcd-endpoints LIST  http://host:2379,...           (default $LEASES_ETCD_ENDPOINTS)",
      "  --consul-url URL       http://host:8500               (default $LEASES_CONSUL_URL)",
      "  --custom-factory CLASS your LeaseStoreFactory (on the class path) as backend 'custom'",
      "  --custom-setting K=V   a setting for it (repeatable)",
      "",
      "what to measure:",
      "  --only LIST            parts to run: failover,latency,scale (default all)",
      "  --scenarios LIST       failover scenarios: clean,crash,pause (default all)",
      "  --trials N             trials per failover scenario (default 3)",
      "  --ttl-ms N             lease TTL for failover (default 2000; raised to a store's minimum)",
      "  --work-ms N            a unit of work: write, sleep N ms, write again (default 20)",
      "  --peers LIST           also run other libraries' leader mechanisms through failover, unfenced:",
      "                         " + String.join(", ", PeerMechanism.ids()) + " or all (default none)",
      "  --latency-samples N    measured calls per operation (default 300), after at least 50 warm-up",
      "                         rounds, more up to 5000 or --latency-warmup so that the JIT has",
      "                         compiled the code",
      "  --latency-warmup DURATION  the warm-up's time budget, e.g. 20s (default 20s)",
      "  --scale LIST           numbers of leases one process holds in one LeaseGroup",
      "                         (default 1,100,10000,100000)",
      "  --scale-rounds N       renewal rounds per size, one every TTL/3 (default 5)",
      "  --scale-ttl DURATION   the group's TTL, e.g. 10s, 2500ms, 1m (default 10s; raised to a",
      "                         store's minimum)",
      "",
      "output:",
      "  --out DIR              report folder (default reports/<timestamp>)",
      "  --help                 this text",
      "",
      "Exit status: 0 ok; 1 a safety violation (a stale write accepted, a token shared by two",
      "holders); 2 bad usage or a backend that cannot be included; 3 a measurement failed.");

  private static final Set<String> VALUED = Set.of("--backends", "--postgres-url", "--redis-uri",
      "--etcd-endpoints", "--consul-url", "--custom-factory", "--custom-setting", "--only",
      "--scenarios", "--trials", "--ttl-ms", "--work-ms", "--latency-samples", "--latency-warmup",
      "--scale", "--scale-rounds", "--scale-ttl", "--out", "--peers");

  List<String> backends;
  boolean backendsGiven;
  boolean startLocal;
  String postgresUrl = System.getenv("LEASES_POSTGRES_URL");
  String redisUri = System.getenv("LEASES_REDIS_URI");
  String etcdEndpoints = System.getenv("LEASES_ETCD_ENDPOINTS");
  String consulUrl = System.getenv("LEASES_CONSUL_URL");
  String customFactory;
  Map<String, String> customSettings = new LinkedHashMap<>();
  Set<String> parts = Set.copyOf(PARTS);
  List<String> scenarios = SCENARIOS;
  int trials = 3;
  long ttlMs = 2000;
  long workMs = 20;
  int latencySamples = 300;
  int latencyWarmup = 50;
  Duration latencyWarmupTime = Duration.ofSeconds(20);
  List<Integer> scale = List.of(1, 100, 10_000, 100_000);
  int scaleRounds = 5;
  Duration scaleTtl = Duration.ofSeconds(10);
  int peers = 3;
  List<String> peerNames = List.of();
  List<PeerMechanism> peerMechanisms = List.of();
  Path out;
  boolean help;

  static BenchOptions parse(String[] args) {
    BenchOptions o = new BenchOptions();
    o.backends = List.of("memory", "postgres");
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String key = a;
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        key = a.substring(0, eq);
        value = a.substring(eq + 1);
      }
      if (key.equals("--help") || key.equals("-h")) {
        o.help = true;
        continue;
      }
      if (key.equals("--start-local")) {
        o.startLocal = true;
        continue;
      }
      if (!VALUED.contains(key)) {
        throw new IllegalArgumentException("unknown option " + a);
      }
      if (value == null) {
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option " + key + " needs a value");
        }
        value = args[++i];
      }
      switch (key) {
        case "--backends" -> {
          o.backends = list(value);
          o.backendsGiven = true;
        }
        case "--postgres-url" -> o.postgresUrl = value;
        case "--redis-uri" -> o.redisUri = value;
        case "--etcd-endpoints" -> o.etcdEndpoints = value;
        case "--consul-url" -> o.consulUrl = value;
        case "--custom-factory" -> o.customFactory = value;
        case "--custom-setting" -> {
          int e = value.indexOf('=');
          if (e <= 0) {
            throw new IllegalArgumentException("--custom-setting needs KEY=VALUE, got " + value);
          }
          o.customSettings.put(value.substring(0, e), value.substring(e + 1));
        }
        case "--only" -> o.parts = Set.copyOf(subset("--only", list(value), PARTS));
        case "--scenarios" -> o.scenarios = subset("--scenarios", list(value), SCENARIOS);
        case "--trials" -> o.trials = positive(key, value);
        case "--ttl-ms" -> o.ttlMs = positive(key, value);
        case "--work-ms" -> o.workMs = positive(key, value);
        case "--latency-samples" -> o.latencySamples = positive(key, value);
        case "--latency-warmup" -> o.latencyWarmupTime = duration(key, value);
        case "--scale" -> o.scale = list(value).stream().map(v -> positive("--scale", v)).toList();
        case "--scale-rounds" -> o.scaleRounds = positive(key, value);
        case "--scale-ttl" -> o.scaleTtl = duration(key, value);
        case "--out" -> o.out = Path.of(value);
        case "--peers" -> {
          o.peerNames = list(value);
          o.peerMechanisms = PeerMechanism.parse(o.peerNames);
        }
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    return o;
  }

  private static List<String> list(String v) {
    return Arrays.stream(v.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
  }

  private static List<String> subset(String option, List<String> given, List<String> known) {
    List<String> out = new ArrayList<>();
    for (String g : given) {
      if (!known.contains(g)) {
        throw new IllegalArgumentException(option + ": unknown '" + g + "'; choose from " + known);
      }
      out.add(g);
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(option + " needs at least one of " + known);
    }
    return out;
  }

  /** {@code 10s}, {@code 2500ms} or {@code 1m}: a positive whole number and a unit. */
  static Duration duration(String option, String v) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9]{1,9})(ms|s|m)")
        .matcher(v.trim());
    if (m.matches() && Long.parseLong(m.group(1)) > 0) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        default -> Duration.ofMinutes(n);
      };
    }
    throw new IllegalArgumentException(option + " needs a positive duration with a unit (ms, s or"
        + " m), like 10s or 2500ms; got '" + v + "'");
  }

  static int positive(String option, String v) {
    try {
      int n = Integer.parseInt(v.trim());
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // falls through to the message
    }
    throw new IllegalArgumentException(option + " needs a positive whole number, got '" + v + "'");
  }
}
