package dev.tally.core.stats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class EstimatesTest {

  // Published values: Wilson's 95% interval for 0 of 10 is [0, 0.2775]; for 81 of 263, [0.2553, 0.3662]
  // (Newcombe, "Two-sided confidence intervals for the single proportion", Stat. Med. 17, 1998, table I).
  @Test
  void wilsonIntervalsMatchPublishedValues() {
    Estimate none = Estimates.proportion(0, 10).orElseThrow();
    assertThat(none.value()).isZero();
    assertThat(none.low()).isZero();
    assertThat(none.high()).isCloseTo(0.2775, within(1e-4));
    assertThat(none.method()).isEqualTo(Estimates.WILSON);
    assertThat(none.confidence()).isEqualTo(0.95);

    Estimate all = Estimates.proportion(10, 10).orElseThrow();
    assertThat(all.low()).isCloseTo(0.7225, within(1e-4));
    assertThat(all.high()).isEqualTo(1.0);

    Estimate some = Estimates.proportion(81, 263).orElseThrow();
    assertThat(some.value()).isCloseTo(0.3080, within(1e-4));
    assertThat(some.low()).isCloseTo(0.2553, within(1e-4));
    assertThat(some.high()).isCloseTo(0.3662, within(1e-4));
    assertThat(some.standardError()).isCloseTo(Math.sqrt(0.30798 * (1 - 0.30798) / 263), within(1e-5));
    assertThat(some.n()).isEqualTo(263);
  }

  @Test
  void noCasesGiveNoEstimateAndImpossibleCountsAreRefused() {
    assertThat(Estimates.proportion(0, 0)).isEmpty();
    assertThat(Estimates.mean(0, 0, 0)).isEmpty();
    assertThatThrownBy(() -> Estimates.proportion(3, 2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3 of 2");
    assertThatThrownBy(() -> Estimates.proportion(-1, 2)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Estimates.mean(-1, 0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Estimates.mean(2, Double.NaN, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("finite");
  }

  // 1..5: mean 3, s = sqrt(2.5), SE = sqrt(0.5); t(0.975, 4) = 2.776445 (any t table).
  @Test
  void aMeanUsesStudentsTWithNMinusOneDegreesOfFreedom() {
    Estimate e = Estimates.mean(5, 15, 55).orElseThrow();
    assertThat(e.value()).isEqualTo(3.0);
    assertThat(e.standardError()).isCloseTo(Math.sqrt(0.5), within(1e-12));
    assertThat(e.low()).isCloseTo(3 - 2.776445 * Math.sqrt(0.5), within(1e-5));
    assertThat(e.high()).isCloseTo(3 + 2.776445 * Math.sqrt(0.5), within(1e-5));
    assertThat(e.method()).isEqualTo(Estimates.STUDENT_T);
  }

  @Test
  void aMeanOfOneScoreHasNoInterval() {
    Estimate e = Estimates.mean(1, 0.25, 0.0625).orElseThrow();
    assertThat(e.value()).isEqualTo(0.25);
    assertThat(e.standardError()).isNull();
    assertThat(e.low()).isNull();
    assertThat(e.high()).isNull();
  }

  @Property
  void aWilsonIntervalStaysInsideZeroToOneAndHoldsItsProportion(
      @ForAll @IntRange(min = 1, max = 1_000_000) int n, @ForAll @IntRange(min = 0, max = 1_000_000) int k) {
    long successes = Math.min(k, n);
    Estimate e = Estimates.proportion(successes, n).orElseThrow();
    assertThat(e.low()).isBetween(0.0, e.value() + 1e-12);
    assertThat(e.high()).isBetween(e.value() - 1e-12, 1.0);
  }

  @Property
  void theMeanFromRunningSumsEqualsTheTwoPassMean(
      @ForAll @Size(min = 2, max = 200) List<@DoubleRange(min = 0, max = 1) Double> scores) {
    double sum = 0;
    double squares = 0;
    for (double s : scores) {
      sum += s;
      squares += s * s;
    }
    Estimate e = Estimates.mean(scores.size(), sum, squares).orElseThrow();
    double mean = scores.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    double deviations = scores.stream().mapToDouble(s -> (s - mean) * (s - mean)).sum();
    double se = Math.sqrt(deviations / (scores.size() - 1) / scores.size());
    assertThat(e.value()).isCloseTo(mean, within(1e-12));
    assertThat(e.standardError()).isCloseTo(se, within(1e-7));
    assertThat(e.low()).isLessThanOrEqualTo(e.value());
    assertThat(e.high()).isGreaterThanOrEqualTo(e.value());
  }
}
