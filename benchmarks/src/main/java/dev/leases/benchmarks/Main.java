package dev.leases.benchmarks;

import java.util.Arrays;

/** Command-line entry point of the runnable jar. */
public final class Main {

  private Main() {}

  static final String USAGE = String.join("\n",
      "usage: java -jar leases-benchmarks.jar <command> [options]",
      "",
      "commands:",
      "  bench [options]     failover, latency and scale per backend; a table, and a report folder",
      "                      (Markdown, JSON, SVG). Default: memory + embedded PostgreSQL.",
      "                      `bench --help` lists the options",
      "  demo [--ttl-ms N]   a leader, a paused stale leader (SIGSTOP) and its write fenced out,",
      "                      on embedded PostgreSQL (or $LEASES_POSTGRES_URL when set)",
      "  nemesis --changes N [options]",
      "                      seeded random faults (pauses, kills, restored snapshots, clock steps,",
      "                      network stalls and cuts, store restarts) until N leadership changes,",
      "                      then a checker over grants and fenced writes. `nemesis --help`",
      "  help                this text");

  public static void main(String[] args) throws Exception {
    String command = args.length == 0 ? "demo" : args[0];
    String[] rest = args.length == 0 ? args : Arrays.copyOfRange(args, 1, args.length);
    switch (command) {
      case "demo" -> System.exit(Demo.run(rest, System.out));
      case "bench" -> System.exit(Bench.run(rest, System.out, System.err));
      case "nemesis" -> System.exit(Nemesis.run(rest, System.out, System.err));
      case "help", "--help", "-h" -> System.out.println(USAGE);
      default -> {
        System.err.println("unknown command '" + command + "'\n\n" + USAGE);
        System.exit(2);
      }
    }
  }
}
