package dev.leases.benchmarks;

import dev.leases.benchmarks.GapAnalysis.Trial;
import dev.leases.benchmarks.RunResult.BackendResult;
import java.util.ArrayList;
import java.util.List;

/**
 * A hand-written SVG of failover gaps: one row per backend and scenario; a bar to the p50, a
 * whisker to the max with a tick at the p95, a dot per trial, and the lower bound (p50 of the
 * trials' bounds) as a red mark.
 */
final class FailoverChart {

  private static final int LEFT = 190;
  private static final int PLOT = 600;
  private static final int TOP = 64;
  private static final int ROW = 34;

  private FailoverChart() {}

  private record Row(String label, List<Trial> trials, Stats gap, Stats bound, int accepted) {}

  static String svg(RunResult run) {
    List<Row> rows = new ArrayList<>();
    double maxV = 0;
    for (BackendResult b : run.backends) {
      if (b.failover == null) {
        continue;
      }
      for (String scenario : run.options.scenarios) {
        List<Trial> ts = b.failover.trials().stream()
            .filter(t -> t.scenario().equals(scenario) && !Double.isNaN(t.gapMs())).toList();
        if (ts.isEmpty()) {
          continue;
        }
        Stats gap = Stats.of(ts.stream().mapToDouble(Trial::gapMs).toArray());
        Stats bound = Stats.of(ts.stream().mapToDouble(Trial::boundMs).toArray());
        rows.add(new Row(b.name + " · " + scenario, ts, gap, bound,
            ts.stream().mapToInt(Trial::staleAccepted).sum()));
        maxV = Math.max(maxV, Math.max(gap.max(), bound.max()));
      }
    }
    double top = niceCeiling(Math.max(maxV, 1));
    int height = TOP + Math.max(1, rows.size()) * ROW + 50;
    int width = LEFT + PLOT + 130;
    StringBuilder s = new StringBuilder();
    s.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.append(String.format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
        + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
        width, height, width, height));
    s.append(String.format("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n",
        width, height));
    s.append(text(10, 20, "Failover gap: old leader's last accepted write to new leader's first"
        + " (TTL " + run.options.ttlMs + " ms requested, " + run.options.trials + " trials)",
        "font-size=\"14\" font-weight=\"bold\""));
    // legend
    int ly = 42;
    s.append(String.format("<rect x=\"10\" y=\"%d\" width=\"18\" height=\"10\" fill=\"#9ecae1\"/>%n",
        ly - 9));
    s.append(text(32, ly, "p50", ""));
    s.append(String.format("<line x1=\"70\" y1=\"%d\" x2=\"100\" y2=\"%d\" stroke=\"#3182bd\""
        + " stroke-width=\"2\"/>%n", ly - 4, ly - 4));
    s.append(String.format("<line x1=\"100\" y1=\"%d\" x2=\"100\" y2=\"%d\" stroke=\"#3182bd\""
        + " stroke-width=\"2\"/>%n", ly - 9, ly + 1));
    s.append(text(104, ly, "to max (tick: p95)", ""));
    s.append(String.format("<circle cx=\"230\" cy=\"%d\" r=\"3.5\" fill=\"#08306b\"/>%n", ly - 4));
    s.append(text(238, ly, "one trial", ""));
    s.append(String.format("<line x1=\"310\" y1=\"%d\" x2=\"310\" y2=\"%d\" stroke=\"#d62728\""
        + " stroke-width=\"3\"/>%n", ly - 11, ly + 3));
    s.append(text(316, ly, "lower bound (lease time left at the fault, p50)", ""));
    int axisY = TOP + Math.max(1, rows.size()) * ROW;
    // grid and axis
    for (int i = 0; i <= 5; i++) {
      double v = top * i / 5;
      double x = x(v, top);
      s.append(String.format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>%n",
          x, TOP - 6, x, axisY));
      s.append(text(x - 14, axisY + 16, Failover.ms(v), ""));
    }
    s.append(String.format("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n",
        LEFT, axisY, LEFT + PLOT, axisY));
    s.append(text(LEFT + PLOT / 2.0 - 20, axisY + 36, "gap", ""));
    if (rows.isEmpty()) {
      s.append(text(LEFT, TOP + 20, "no failover trials in this run", ""));
    }
    int y = TOP;
    for (Row r : rows) {
      int mid = y + ROW / 2;
      s.append(text(10, mid + 4, r.label(), r.accepted() > 0 ? "fill=\"#d62728\"" : ""));
      s.append(String.format("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"12\""
          + " fill=\"#9ecae1\"/>%n", LEFT, mid - 6, x(r.gap().p50(), top) - LEFT));
      s.append(String.format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#3182bd\""
          + " stroke-width=\"2\"/>%n", x(r.gap().p50(), top), mid, x(r.gap().max(), top), mid));
      for (double v : new double[] {r.gap().p95(), r.gap().max()}) {
        s.append(String.format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#3182bd\""
            + " stroke-width=\"2\"/>%n", x(v, top), mid - 5, x(v, top), mid + 5));
      }
      for (Trial t : r.trials()) {
        s.append(String.format("<circle cx=\"%.1f\" cy=\"%d\" r=\"3.5\" fill=\"#08306b\""
            + " fill-opacity=\"0.7\"><title>trial %d: gap %s, bound %s</title></circle>%n",
            x(t.gapMs(), top), mid, t.number(), Failover.ms(t.gapMs()), Failover.ms(t.boundMs())));
      }
      s.append(String.format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\""
          + " stroke-width=\"3\"/>%n", x(r.bound().p50(), top), mid - 10, x(r.bound().p50(), top),
          mid + 10));
      s.append(text(x(r.gap().max(), top) + 8, mid + 4, "p50 " + Failover.ms(r.gap().p50())
          + (r.accepted() > 0 ? "  STALE WRITES ACCEPTED: " + r.accepted() : ""),
          "fill=\"#555\" font-size=\"11\""));
      y += ROW;
    }
    return s.append("</svg>\n").toString();
  }

  private static double x(double v, double top) {
    return LEFT + Math.max(0, Math.min(v, top)) / top * PLOT;
  }

  /** 1, 2 or 5 times a power of ten, at least {@code v}. */
  static double niceCeiling(double v) {
    double p = Math.pow(10, Math.floor(Math.log10(v)));
    for (double m : new double[] {1, 2, 5, 10}) {
      if (m * p >= v) {
        return m * p;
      }
    }
    return 10 * p;
  }

  private static String text(double x, double y, String t, String attrs) {
    return String.format("<text x=\"%.1f\" y=\"%.1f\"%s>%s</text>%n", x, y,
        attrs.isEmpty() ? "" : " " + attrs, escape(t));
  }

  static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
