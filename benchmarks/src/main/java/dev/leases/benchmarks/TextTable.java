package dev.leases.benchmarks;

import java.util.ArrayList;
import java.util.List;

/** A table rendered as aligned plain text or as a Markdown table. */
final class TextTable {

  private final List<String> headers;
  private final List<List<String>> rows = new ArrayList<>();

  TextTable(String... headers) {
    this.headers = List.of(headers);
  }

  TextTable row(Object... cells) {
    List<String> r = new ArrayList<>();
    for (Object c : cells) {
      r.add(String.valueOf(c));
    }
    rows.add(r);
    return this;
  }

  boolean isEmpty() {
    return rows.isEmpty();
  }

  String text() {
    int[] w = new int[headers.size()];
    for (int i = 0; i < w.length; i++) {
      w[i] = headers.get(i).length();
      for (List<String> r : rows) {
        w[i] = Math.max(w[i], r.get(i).length());
      }
    }
    StringBuilder sb = new StringBuilder();
    line(sb, headers, w);
    StringBuilder rule = new StringBuilder();
    for (int i = 0; i < w.length; i++) {
      rule.append(i == 0 ? "" : "  ").append("-".repeat(w[i]));
    }
    sb.append(rule).append('\n');
    rows.forEach(r -> line(sb, r, w));
    return sb.toString();
  }

  private static void line(StringBuilder sb, List<String> cells, int[] w) {
    StringBuilder l = new StringBuilder();
    for (int i = 0; i < w.length; i++) {
      l.append(i == 0 ? "" : "  ").append(String.format("%-" + w[i] + "s", cells.get(i)));
    }
    sb.append(l.toString().stripTrailing()).append('\n');
  }

  String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("| ").append(String.join(" | ", headers.stream().map(TextTable::md).toList()))
        .append(" |\n|");
    headers.forEach(h -> sb.append("---|"));
    sb.append('\n');
    for (List<String> r : rows) {
      sb.append("| ").append(String.join(" | ", r.stream().map(TextTable::md).toList()))
          .append(" |\n");
    }
    return sb.toString();
  }

  private static String md(String s) {
    return s.replace("|", "\\|");
  }
}
