package dev.leases.benchmarks;

import java.util.Arrays;
import java.util.Collection;

/** Percentiles by the nearest-rank method: the smallest sample with at least p% at or below it. */
record Stats(int count, double p50, double p95, double p99, double max) {

  static Stats of(Collection<? extends Number> samples) {
    return of(samples.stream().mapToDouble(Number::doubleValue).toArray());
  }

  static Stats of(double[] samples) {
    if (samples.length == 0) {
      return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
    }
    double[] s = samples.clone();
    Arrays.sort(s);
    return new Stats(s.length, rank(s, 50), rank(s, 95), rank(s, 99), s[s.length - 1]);
  }

  /** The nearest-rank percentile of sorted samples. */
  static double rank(double[] sorted, double percent) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int idx = (int) Math.ceil(percent / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
  }
}
