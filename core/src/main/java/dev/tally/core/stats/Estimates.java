package dev.tally.core.stats;

import java.util.Optional;
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
 * </ul>
 *
 * <p>Pure functions of their arguments: no clock, no randomness, no I/O. Thread-safe.
 */
public final class Estimates {
  /** {@link Estimate#method} of a proportion's interval. */
  public static final String WILSON = "wilson";

  /** {@link Estimate#method} of a mean's interval. */
  public static final String STUDENT_T = "student-t";

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
}
