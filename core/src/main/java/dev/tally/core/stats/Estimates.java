package dev.tally.core.stats;

import java.util.Optional;
import org.apache.commons.math3.distribution.BinomialDistribution;
import org.apache.commons.math3.distribution.NormalDistribution;
import org.apache.commons.math3.distribution.TDistribution;

/**
 * The one owner of how Tally states a figure and its noise: accuracy as a proportion with the Wilson
 * score interval, and a mean score with Student's t interval. The summary file, {@code tally status},
 * the API and the dashboard all show what these return.
 *
 * <ul>
 *   <li>{@link #proportion}: {@code successes / n}; standard error {@code sqrt(p(1-p)/n)}; the 95% interval
 *       is Wilson's score interval (E. B. Wilson, "Probable inference, the law of succession, and
 *       statistical inference", JASA 22(158), 1927), which stays inside [0, 1] and is honest at 0% and
 *       100%, where the normal ("Wald") interval collapses to a point.
 *   <li>{@link #mean}: the sample mean from the count, sum and sum of squares; standard error {@code s /
 *       sqrt(n)} with {@code s} the sample standard deviation (n - 1 in the denominator); the 95% interval
 *       is {@code mean ± t(0.975, n-1) · SE}, which for small n is wider than the normal one, as it must be.
 *   <li>{@link #pairedDifference}: the difference of two accuracies over the same cases (run B's minus run
 *       A's), with the Agresti-Min interval and McNemar's exact test (see there).
 * </ul>
 *
 * <p>Pure functions of their arguments: no clock, no randomness, no I/O. Thread-safe.
 */
public final class Estimates {
  /** {@link Estimate#method} of a proportion's interval. */
  public static final String WILSON = "wilson";

  /** {@link Estimate#method} of a mean's interval. */
  public static final String STUDENT_T = "student-t";

  /** {@link PairedDifference#method} of a paired difference's interval. */
  public static final String AGRESTI_MIN = "agresti-min";

  /** The confidence level of every interval this class makes. */
  public static final double CONFIDENCE = 0.95;

  /** The standard normal quantile at (1 + {@link #CONFIDENCE}) / 2 (about 1.96). */
  private static final double Z = new NormalDistribution(null, 0, 1).inverseCumulativeProbability((1 + CONFIDENCE) / 2);

  private Estimates() {}

  /**
   * A proportion with its Wilson interval.
   *
   * @param successes cases that count (for accuracy: passed)
   * @param n cases judged
   * @return empty when {@code n} is 0 (nothing to estimate from)
   * @throws IllegalArgumentException if {@code successes} is negative or more than {@code n}
   */
  public static Optional<Estimate> proportion(long successes, long n) {
    if (successes < 0 || successes > n) {
      throw new IllegalArgumentException("successes must be in [0, n]: " + successes + " of " + n);
    }
    if (n == 0) {
      return Optional.empty();
    }
    double p = (double) successes / n;
    double z2 = Z * Z;
    double denominator = 1 + z2 / n;
    double centre = (p + z2 / (2.0 * n)) / denominator;
    double half = Z * Math.sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / denominator;
    // At 0 and at n the interval's end is exactly 0 or 1; rounding must not move it, nor push any end past [0, 1].
    double low = successes == 0 ? 0 : Math.max(0, centre - half);
    double high = successes == n ? 1 : Math.min(1, centre + half);
    return Optional.of(new Estimate(p, n, Math.sqrt(p * (1 - p) / n), low, high, CONFIDENCE, WILSON));
  }

  /**
   * A mean with its Student's t interval, from running sums (so that a store can keep them as counters).
   * The variance is {@code (sumOfSquares - sum · mean) / (n - 1)}, clamped at 0 against rounding: fine for
   * scores of moderate size (a score in [0, 1] over a million cases loses nothing that shows).
   *
   * @param n how many scores
   * @param sum their sum
   * @param sumOfSquares the sum of their squares
   * @return empty when {@code n} is 0; with a {@code null} standard error and interval when {@code n} is 1
   * @throws IllegalArgumentException if {@code n} is negative, or a sum is not finite
   */
  public static Optional<Estimate> mean(long n, double sum, double sumOfSquares) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be >= 0: " + n);
    }
    if (!Double.isFinite(sum) || !Double.isFinite(sumOfSquares)) {
      throw new IllegalArgumentException("sums must be finite: sum " + sum + ", sum of squares " + sumOfSquares);
    }
    if (n == 0) {
      return Optional.empty();
    }
    double mean = sum / n;
    if (n == 1) {
      return Optional.of(new Estimate(mean, 1, null, null, null, CONFIDENCE, STUDENT_T));
    }
    double variance = Math.max(0, (sumOfSquares - sum * mean) / (n - 1));
    double se = Math.sqrt(variance / n);
    double t = new TDistribution(null, n - 1).inverseCumulativeProbability((1 + CONFIDENCE) / 2);
    return Optional.of(new Estimate(mean, n, se, mean - t * se, mean + t * se, CONFIDENCE, STUDENT_T));
  }

  /**
   * The difference of two accuracies measured on the same cases (run A and run B), from the 2x2 table of
   * their verdicts per case: {@code (onlyB - onlyA) / n}, B's accuracy minus A's.
   *
   * <ul>
   *   <li>The 95% interval is Agresti and Min's (A. Agresti, Y. Min, "Simple improved confidence intervals
   *       for comparing matched proportions", Statistics in Medicine 24(5), 2005): the Wald interval of the
   *       table with 1/2 added to each cell, so {@code n + 2} pairs, centred on {@code (onlyB - onlyA) / (n +
   *       2)} with variance {@code (p12 + p21 - (p21 - p12)^2) / (n + 2)}; clamped to [-1, 1]. Unlike the
   *       plain Wald interval it does not collapse to a point when no case changed.
   *   <li>The p-value is McNemar's exact test (Q. McNemar, Psychometrika 12(2), 1947, in its exact binomial
   *       form): under "no difference" each of the {@code onlyA + onlyB} discordant cases is equally likely
   *       either way, so {@code p = min(1, 2 · P(X <= min(onlyA, onlyB)))} with {@code X ~ Binomial(onlyA +
   *       onlyB, 1/2)}; 1 when no case is discordant.
   * </ul>
   *
   * @param bothPass cases both runs passed
   * @param onlyA cases A passed and B did not
   * @param onlyB cases B passed and A did not
   * @param neither cases neither passed
   * @return empty when there is no case (all four 0)
   * @throws IllegalArgumentException if a count is negative
   */
  public static Optional<PairedDifference> pairedDifference(long bothPass, long onlyA, long onlyB, long neither) {
    if (bothPass < 0 || onlyA < 0 || onlyB < 0 || neither < 0) {
      throw new IllegalArgumentException("counts must be >= 0: " + bothPass + ", " + onlyA + ", " + onlyB + ", " + neither);
    }
    long n = bothPass + onlyA + onlyB + neither;
    if (n == 0) {
      return Optional.empty();
    }
    double difference = (double) (onlyB - onlyA) / n;
    double adjustedN = n + 2.0;
    double p12 = (onlyA + 0.5) / adjustedN;
    double p21 = (onlyB + 0.5) / adjustedN;
    double centre = p21 - p12;
    double se = Math.sqrt(Math.max(0, p12 + p21 - centre * centre) / adjustedN);
    double low = Math.max(-1, centre - Z * se);
    double high = Math.min(1, centre + Z * se);
    long discordant = onlyA + onlyB;
    double p = discordant == 0 ? 1
        : Math.min(1, 2 * new BinomialDistribution(null, (int) Math.min(discordant, Integer.MAX_VALUE), 0.5)
            .cumulativeProbability((int) Math.min(onlyA, onlyB)));
    return Optional.of(new PairedDifference(difference, n, onlyA, onlyB, se, low, high, CONFIDENCE, AGRESTI_MIN, p));
  }
}
