package dev.leases.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Runs the CLI in-process and keeps what it printed. */
record CliRun(int code, String out, String err) {

  private static final ObjectMapper JSON = new ObjectMapper();

  static CliRun run(Map<String, String> env, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = LeasesCli.execute(new PrintWriter(out), new PrintWriter(err), env, args);
    return new CliRun(code, out.toString(), err.toString());
  }

  static CliRun run(String... args) {
    return run(Map.of(), args);
  }

  /**
   * Starts {@code watch NAME --json --interval 60000 --count 2 STORE-ARGS} in the background, waits
   * until it printed HELD (its release subscription is then in place), runs {@code release}, and
   * checks that the watch, woken by the release hint well before its 60 s poll, printed FREE next.
   */
  static void assertReleaseHintWakesWatch(String name, List<String> storeArgs, Runnable release)
      throws Exception {
    List<String> args = new ArrayList<>(List.of("watch", name, "--json", "--interval", "60000",
        "--count", "2"));
    args.addAll(storeArgs);
    StringWriter out = new StringWriter();
    CompletableFuture<Integer> watch = CompletableFuture.supplyAsync(() -> LeasesCli.execute(
        new PrintWriter(out), new PrintWriter(new StringWriter()), Map.of(),
        args.toArray(String[]::new)));
    await().atMost(Duration.ofSeconds(30)).until(() -> out.toString().contains("HELD"));

    release.run();

    assertThat(watch.get(30, TimeUnit.SECONDS)).as(out.toString()).isZero();
    assertThat(new CliRun(0, out.toString(), "").jsonLines())
        .extracting(j -> j.get("status").asText()).containsExactly("HELD", "FREE");
  }

  /**
   * Checks that {@code history} was refused on {@code backend} before anything was printed: exit
   * 2 (usage), and a message that says this backend keeps no history and etcd does.
   */
  static void assertHistoryRefused(CliRun r, String backend) {
    assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.err()).as(r.toString()).contains("the " + backend + " store keeps no history",
        "etcd keeps one", "--store etcd");
    assertThat(r.out()).as(r.toString()).isEmpty();
  }

  /** The single JSON object printed. */
  JsonNode json() {
    List<JsonNode> lines = jsonLines();
    if (lines.size() != 1) {
      throw new AssertionError("expected one JSON line, got " + lines.size() + ": " + this);
    }
    return lines.get(0);
  }

  /** Every line of standard output, parsed as JSON. */
  List<JsonNode> jsonLines() {
    List<JsonNode> nodes = new ArrayList<>();
    for (String line : out.split("\n")) {
      if (!line.isBlank()) {
        try {
          nodes.add(JSON.readTree(line));
        } catch (Exception e) {
          throw new AssertionError("not JSON: " + line + " in " + this, e);
        }
      }
    }
    return nodes;
  }

  @Override
  public String toString() {
    return "exit " + code + "\n--- out\n" + out + "--- err\n" + err;
  }
}
