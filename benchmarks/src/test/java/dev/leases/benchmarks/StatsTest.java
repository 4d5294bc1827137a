package dev.leases.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class StatsTest {

  @Test
  void nearestRankPercentiles() {
    double[] s = new double[100];
    for (int i = 0; i < 100; i++) {
      s[99 - i] = i + 1; // 100..1, unsorted on purpose
    }
    Stats st = Stats.of(s);
    assertThat(st.count()).isEqualTo(100);
    assertThat(st.p50()).isEqualTo(50);
    assertThat(st.p95()).isEqualTo(95);
    assertThat(st.p99()).isEqualTo(99);
    assertThat(st.max()).isEqualTo(100);
  }

  @Test
  void smallSamples() {
    assertThat(Stats.of(List.of(3.0, 1.0, 2.0)).p50()).isEqualTo(2.0);
    assertThat(Stats.of(List.of(3.0, 1.0, 2.0)).p95()).isEqualTo(3.0);
    assertThat(Stats.of(List.of(7.0)).p99()).isEqualTo(7.0);
    assertThat(Stats.of(List.of(1.0, 2.0)).p50()).isEqualTo(1.0);
  }

  @Test
  void emptyIsNaN() {
    Stats st = Stats.of(new double[0]);
    assertThat(st.count()).isZero();
    assertThat(st.p50()).isNaN();
    assertThat(st.max()).isNaN();
  }
}
