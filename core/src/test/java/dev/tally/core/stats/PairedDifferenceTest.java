package dev.tally.core.stats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.math.BigInteger;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class PairedDifferenceTest {

  // By hand: 10 cases, 5 both pass, A only 1, B only 3, neither 1. Difference (3 - 1) / 10 = 0.2.
  // Agresti-Min: p12 = 1.5/12 = 0.125, p21 = 3.5/12 = 0.291667, centre 0.166667,
  // variance (0.416667 - 0.027778) / 12 = 0.0324074, SE 0.180021, half 1.959964 * SE = 0.352835:
  // [-0.186168, 0.519501]. McNemar: 4 discordant, min 1: P(X <= 1) = (1 + 4) / 16, p = 10/16 = 0.625.
  @Test
  void matchesHandComputedValues() {
    PairedDifference d = Estimates.pairedDifference(5, 1, 3, 1).orElseThrow();
    assertThat(d.difference()).isCloseTo(0.2, within(1e-12));
    assertThat(d.n()).isEqualTo(10);
    assertThat(d.onlyA()).isEqualTo(1);
    assertThat(d.onlyB()).isEqualTo(3);
    assertThat(d.standardError()).isCloseTo(0.180021, within(1e-6));
    assertThat(d.low()).isCloseTo(-0.186168, within(1e-6));
    assertThat(d.high()).isCloseTo(0.519501, within(1e-6));
    assertThat(d.pValue()).isCloseTo(0.625, within(1e-12));
    assertThat(d.beyondNoise()).isFalse();
    assertThat(d.method()).isEqualTo(Estimates.AGRESTI_MIN);
    assertThat(d.confidence()).isEqualTo(0.95);
  }

  // Ten cases that all went from fail to pass: p = 2 / 2^10 = 0.001953125, beyond the noise.
  @Test
  void everyCaseFlippedIsBeyondTheNoise() {
    PairedDifference d = Estimates.pairedDifference(0, 0, 10, 0).orElseThrow();
    assertThat(d.difference()).isEqualTo(1.0);
    assertThat(d.pValue()).isCloseTo(2.0 / 1024, within(1e-12));
    assertThat(d.beyondNoise()).isTrue();
    assertThat(d.high()).isLessThanOrEqualTo(1.0);
    assertThat(d.low()).isGreaterThan(0);
  }

  @Test
  void noChangedCaseIsNoDifferenceWithAnIntervalThatDoesNotCollapse() {
    PairedDifference d = Estimates.pairedDifference(40, 0, 0, 10).orElseThrow();
    assertThat(d.difference()).isZero();
    assertThat(d.pValue()).isEqualTo(1.0);
    assertThat(d.beyondNoise()).isFalse();
    assertThat(d.low()).isNegative();
    assertThat(d.high()).isPositive();
    assertThat(d.low()).isCloseTo(-d.high(), within(1e-12));
  }

  @Test
  void nothingToCompareIsEmptyAndNegativeCountsAreRefused() {
    assertThat(Estimates.pairedDifference(0, 0, 0, 0)).isEmpty();
    assertThatThrownBy(() -> Estimates.pairedDifference(1, -1, 0, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
  }

  /** McNemar's exact p-value against the binomial tail summed exactly in integers. */
  @Property(tries = 200)
  void mcNemarMatchesAnExactBinomialSum(@ForAll @IntRange(min = 0, max = 40) int onlyA, @ForAll @IntRange(min = 0, max = 40) int onlyB) {
    int m = onlyA + onlyB;
    double expected;
    if (m == 0) {
      expected = 1;
    } else {
      BigInteger tail = BigInteger.ZERO;
      for (int i = 0; i <= Math.min(onlyA, onlyB); i++) {
        tail = tail.add(choose(m, i));
      }
      expected = Math.min(1, 2 * tail.doubleValue() / BigInteger.TWO.pow(m).doubleValue());
    }
    PairedDifference d = Estimates.pairedDifference(7, onlyA, onlyB, 3).orElseThrow();
    assertThat(d.pValue()).isCloseTo(expected, within(1e-9));
    assertThat(d.low()).isBetween(-1.0, d.high());
    assertThat(d.high()).isLessThanOrEqualTo(1.0);
  }

  private static BigInteger choose(int n, int k) {
    BigInteger r = BigInteger.ONE;
    for (int i = 0; i < k; i++) {
      r = r.multiply(BigInteger.valueOf(n - i)).divide(BigInteger.valueOf(i + 1));
    }
    return r;
  }
}
