package dev.leases.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
