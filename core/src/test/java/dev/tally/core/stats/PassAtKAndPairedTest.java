package dev.tally.core.stats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.tally.core.stats.Estimates.Attempts;
import dev.tally.core.stats.Estimates.PairedDifference;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class PassAtKAndPairedTest {

  // By hand: 5 attempts, 2 passed, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10. k = 1 is the plain pass rate.
  @Test
  void passAtKMatchesHandComputedValues() {
    assertThat(Estimates.passAtK(5, 2, 2)).isCloseTo(0.7, within(1e-12));
    assertThat(Estimates.passAtK(10, 3, 1)).isCloseTo(0.3, within(1e-12));
    assertThat(Estimates.passAtK(10, 0, 5)).isZero();
    // 4 attempts, 1 failed: any draw of 2 holds a pass.
    assertThat(Estimates.passAtK(4, 3, 2)).isEqualTo(1.0);
    // C(8,3)/C(10,3) = 56/120.
    assertThat(Estimates.passAtK(10, 2, 3)).isCloseTo(1 - 56.0 / 120, within(1e-12));
  }

  @Property
  void passAtKEqualsTheExactBinomialRatio(
      @ForAll @IntRange(min = 1, max = 200) int n, @ForAll @IntRange(min = 0, max = 200) int cRaw,
      @ForAll @IntRange(min = 1, max = 200) int kRaw) {
    int c = Math.min(cRaw, n);
    int k = Math.min(kRaw, n);
    // Another way: exact big-integer binomial coefficients, divided in decimal.
    BigDecimal ratio = new BigDecimal(binomial(n - c, k)).divide(new BigDecimal(binomial(n, k)), MathContext.DECIMAL64);
    assertThat(Estimates.passAtK(n, c, k)).isCloseTo(1 - ratio.doubleValue(), within(1e-9));
  }

  private static BigInteger binomial(int n, int k) {
    if (k > n) {
      return BigInteger.ZERO;
    }
    BigInteger r = BigInteger.ONE;
    for (int i = 0; i < k; i++) {
      r = r.multiply(BigInteger.valueOf(n - i)).divide(BigInteger.valueOf(i + 1));
    }
    return r;
  }

  @Test
  void passAtKOverCasesIsTheMeanWithItsStandardError() {
    // Per case: 0.7, 1.0, 0.0 (k = 2). Mean 17/30; sample variance by hand.
    Estimate e = Estimates.passAtK(List.of(new Attempts(5, 2), new Attempts(4, 3), new Attempts(3, 0)), 2).orElseThrow();
    double mean = 1.7 / 3;
    double variance = ((0.7 - mean) * (0.7 - mean) + (1 - mean) * (1 - mean) + mean * mean) / 2;
    assertThat(e.value()).isCloseTo(mean, within(1e-12));
    assertThat(e.standardError()).isCloseTo(Math.sqrt(variance / 3), within(1e-9));
    assertThat(e.n()).isEqualTo(3);
    assertThat(e.method()).isEqualTo(Estimates.STUDENT_T);
    assertThat(Estimates.passAtK(List.of(), 1)).isEmpty();
  }

  @Test
  void passAtKRefusesTooFewAttemptsAndNamesTheCase() {
    assertThatThrownBy(() -> Estimates.passAtK(List.of(new Attempts(5, 1), new Attempts(2, 1)), 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("case 2 of 2")
        .hasMessageContaining("at least 3 attempts");
    assertThatThrownBy(() -> Estimates.passAtK(3, 1, 0)).hasMessageContaining("k must be >= 1");
    assertThatThrownBy(() -> Estimates.passAtK(3, 4, 1)).hasMessageContaining("4 of 3");
    assertThatThrownBy(() -> new Attempts(0, 0)).isInstanceOf(IllegalArgumentException.class);
  }

  // McNemar by hand: 0 against 5 discordant: 2 * (1/2)^5; 1 against 9: 2 * (1 + 10) / 2^10.
  @Test
  void mcnemarExactPMatchesHandComputedValues() {
    assertThat(Estimates.pairedDifference(10, 0, 5, 10).orElseThrow().mcnemarP()).isCloseTo(2.0 / 32, within(1e-12));
    PairedDifference p = Estimates.pairedDifference(40, 1, 9, 50).orElseThrow();
    assertThat(p.mcnemarP()).isCloseTo(22.0 / 1024, within(1e-12));
    assertThat(p.beyondNoise()).isTrue();
    assertThat(Estimates.pairedDifference(10, 3, 3, 10).orElseThrow().mcnemarP()).isEqualTo(1.0);
    PairedDifference same = Estimates.pairedDifference(7, 0, 0, 3).orElseThrow();
    assertThat(same.mcnemarP()).isEqualTo(1.0);
    assertThat(same.beyondNoise()).isFalse();
    assertThat(same.difference().value()).isZero();
  }

  @Test
  void pairedDifferenceIsBMinusAWithNewcombesInterval() {
    PairedDifference p = Estimates.pairedDifference(40, 1, 9, 50).orElseThrow();
    assertThat(p.n()).isEqualTo(100);
    Estimate d = p.difference();
    assertThat(d.value()).isCloseTo(0.08, within(1e-12));
    assertThat(d.method()).isEqualTo(Estimates.NEWCOMBE_PAIRED);
    assertThat(d.standardError()).isCloseTo(Math.sqrt(10 - 64 / 100.0) / 100, within(1e-12));
    double[] expected = newcombe(40, 1, 9, 50);
    assertThat(d.low()).isCloseTo(expected[0], within(1e-9));
    assertThat(d.high()).isCloseTo(expected[1], within(1e-9));
    assertThat(d.low()).isGreaterThan(0);
  }

  @Property
  void newcombesIntervalHoldsTheDifferenceAndAgreesWithAnIndependentComputation(
      @ForAll @IntRange(min = 0, max = 60) int both, @ForAll @IntRange(min = 0, max = 60) int onlyA,
      @ForAll @IntRange(min = 0, max = 60) int onlyB, @ForAll @IntRange(min = 0, max = 60) int neither) {
    if (both + onlyA + onlyB + neither == 0) {
      assertThat(Estimates.pairedDifference(0, 0, 0, 0)).isEmpty();
      return;
    }
    Estimate d = Estimates.pairedDifference(both, onlyA, onlyB, neither).orElseThrow().difference();
    double[] expected = newcombe(both, onlyA, onlyB, neither);
    assertThat(d.low()).isCloseTo(Math.max(-1, expected[0]), within(1e-9));
    assertThat(d.high()).isCloseTo(Math.min(1, expected[1]), within(1e-9));
    assertThat(d.low()).isBetween(-1.0, d.value() + 1e-12);
    assertThat(d.high()).isBetween(d.value() - 1e-12, 1.0);
    // Swapping the runs mirrors the interval.
    Estimate mirrored = Estimates.pairedDifference(both, onlyB, onlyA, neither).orElseThrow().difference();
    assertThat(mirrored.low()).isCloseTo(-d.high(), within(1e-9));
  }

  @Test
  void negativeCountsAreRefused() {
    assertThatThrownBy(() -> Estimates.pairedDifference(1, -1, 0, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("only A -1");
  }

  /**
   * Newcombe's method 10 written from the paper's notation, with Wilson's limits as the roots of the quadratic
   * {@code (p̂ - p)² = z² p (1 - p) / n} (not through {@link Estimates#proportion}).
   */
  private static double[] newcombe(long a, long b, long c, long d) {
    double n = a + b + c + d;
    double z = 1.959963984540054;
    double p1 = (a + c) / n; // run B: passed in both, or in B only
    double p2 = (a + b) / n; // run A
    double[] w1 = wilsonRoots(p1, n, z);
    double[] w2 = wilsonRoots(p2, n, z);
    double e = a + c;
    double f = b + d;
    double g = a + b;
    double h = c + d;
    double product = e * f * g * h;
    double phi = product == 0 ? 0 : (a * d - b * c) / Math.sqrt(product);
    double dl1 = p1 - w1[0];
    double du1 = w1[1] - p1;
    double dl2 = p2 - w2[0];
    double du2 = w2[1] - p2;
    double theta = p1 - p2;
    return new double[] {
      theta - Math.sqrt(dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2),
      theta + Math.sqrt(du1 * du1 - 2 * phi * du1 * dl2 + dl2 * dl2)
    };
  }

  private static double[] wilsonRoots(double p, double n, double z) {
    // (1 + z²/n) q² - (2p + z²/n) q + p² = 0
    double qa = 1 + z * z / n;
    double qb = -(2 * p + z * z / n);
    double qc = p * p;
    double root = Math.sqrt(Math.max(0, qb * qb - 4 * qa * qc));
    return new double[] {(-qb - root) / (2 * qa), (-qb + root) / (2 * qa)};
  }
}
