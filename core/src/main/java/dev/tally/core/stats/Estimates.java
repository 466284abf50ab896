package dev.tally.core.stats;

import java.util.List;
import java.util.Objects;
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
 *   <li>{@link #passAtK}: the chance that at least one of k attempts at a case passes, estimated without
 *       bias from n ≥ k attempts of which c passed (Chen et al., "Evaluating Large Language Models Trained
 *       on Code", 2021, eq. 1: {@code 1 - C(n-c, k) / C(n, k)}), averaged over cases as a {@link #mean}.
 *   <li>{@link #pairedDifference}: two runs' accuracies over the same cases, their difference with
 *       Newcombe's paired score interval and McNemar's exact test.
 * </ul>
 *
 * <p>Pure functions of their arguments: no clock, no randomness, no I/O. Thread-safe.
 */
public final class Estimates {
  /** {@link Estimate#method} of a proportion's interval. */
  public static final String WILSON = "wilson";

  /** {@link Estimate#method} of a mean's interval. */
  public static final String STUDENT_T = "student-t";

  /** {@link Estimate#method} of a paired difference's interval: Newcombe's hybrid score interval (method 10). */
  public static final String NEWCOMBE_PAIRED = "newcombe-paired";

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
   * The unbiased estimate of pass@k for one case: the chance that a draw of {@code k} of its {@code n}
   * attempts, {@code c} of which passed, holds at least one pass (Chen et al. 2021, eq. 1). Computed as the
   * product {@code 1 - Π_{i=n-c+1..n} (1 - k/i)}, which equals {@code 1 - C(n-c,k)/C(n,k)} without the
   * binomial coefficients' overflow (the paper's numerically stable form).
   *
   * @param n attempts at the case
   * @param c of them passed
   * @param k attempts drawn
   * @return in [0, 1]; exactly 1 when {@code n - c < k} (every draw of k holds a pass)
   * @throws IllegalArgumentException if {@code k < 1}, {@code n < k}, or {@code c} is not in [0, n]
   */
  public static double passAtK(int n, int c, int k) {
    if (k < 1) {
      throw new IllegalArgumentException("k must be >= 1: " + k);
    }
    if (n < k) {
      throw new IllegalArgumentException("pass@" + k + " needs at least " + k + " attempts per case, got " + n);
    }
    if (c < 0 || c > n) {
      throw new IllegalArgumentException("passed attempts must be in [0, n]: " + c + " of " + n);
    }
    if (n - c < k) {
      return 1.0;
    }
    double allFail = 1.0;
    for (int i = n - c + 1; i <= n; i++) {
      allFail *= 1.0 - (double) k / i;
    }
    return 1.0 - allFail;
  }

  /**
   * One case's attempts, for {@link #passAtK(List, int)}.
   *
   * @param attempts attempts at the case (its epochs), at least 1
   * @param passed of them passed, in [0, attempts]
   */
  public record Attempts(int attempts, int passed) {
    /**
     * @throws IllegalArgumentException if {@code attempts < 1} or {@code passed} is not in [0, attempts]
     */
    public Attempts {
      if (attempts < 1 || passed < 0 || passed > attempts) {
        throw new IllegalArgumentException("attempts must be >= 1 and passed in [0, attempts]: " + passed + " of " + attempts);
      }
    }
  }

  /**
   * pass@k over cases: the mean of each case's {@link #passAtK(int, int, int)}, with that mean's standard
   * error and Student's t interval ({@link #mean}), so a run of few cases shows how little it knows. Like
   * any t interval it is not clipped: with few cases near 0 or 1 an end may pass [0, 1], which says the
   * sample is too small to bound it there.
   * Cases may have different numbers of attempts, each at least {@code k}.
   *
   * @param cases each case's attempts and passes
   * @param k attempts drawn
   * @return empty when there are no cases
   * @throws IllegalArgumentException if {@code k < 1} or a case has fewer than {@code k} attempts (the
   *     message names its place in {@code cases})
   */
  public static Optional<Estimate> passAtK(List<Attempts> cases, int k) {
    Objects.requireNonNull(cases, "cases");
    double sum = 0;
    double sumOfSquares = 0;
    for (int i = 0; i < cases.size(); i++) {
      Attempts a = cases.get(i);
      double p;
      try {
        p = passAtK(a.attempts(), a.passed(), k);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("case " + (i + 1) + " of " + cases.size() + ": " + e.getMessage(), e);
      }
      sum += p;
      sumOfSquares += p * p;
    }
    return mean(cases.size(), sum, sumOfSquares);
  }

  /**
   * Two runs judged on the same cases, as the four counts of their paired table, with the difference of
   * their accuracies ({@code b - a}: positive when run B is better) and whether it is beyond the noise.
   *
   * <p>The difference's 95% interval is Newcombe's hybrid score interval for paired proportions (R. G.
   * Newcombe, "Improved confidence intervals for the difference between binomial proportions based on
   * paired data", Stat. Med. 17, 1998, method 10, without continuity correction): it combines each run's
   * Wilson interval with the correlation of the pairs, so it stays inside [-1, 1] and is honest near 0%
   * and 100%, where the Wald interval collapses. The standard error is the Wald one, {@code sqrt(onlyA +
   * onlyB - (onlyB - onlyA)²/n) / n}, for readers who want one number.
   *
   * <p>{@link #mcnemarP} is McNemar's exact test: under "no difference" each discordant case (passed in one
   * run only) is equally likely to favour either run, so the two-sided p-value is {@code min(1, 2 · P(X ≤
   * min(onlyA, onlyB)))} with {@code X ~ Binomial(onlyA + onlyB, 1/2)}; 1 when no case is discordant.
   *
   * @param bothPassed cases that passed in both runs
   * @param onlyA cases that passed in run A only (B made them fail)
   * @param onlyB cases that passed in run B only (B fixed them)
   * @param neitherPassed cases that passed in neither
   * @param difference accuracy of B minus accuracy of A, with {@link #NEWCOMBE_PAIRED} interval
   * @param mcnemarP McNemar's exact two-sided p-value, in (0, 1]
   */
  public record PairedDifference(
      long bothPassed, long onlyA, long onlyB, long neitherPassed, Estimate difference, double mcnemarP) {
    /** Cases both runs judged. */
    public long n() {
      return bothPassed + onlyA + onlyB + neitherPassed;
    }

    /**
     * Whether the runs differ beyond the noise: McNemar's p-value below {@code 1 - }{@link #CONFIDENCE}
     * (0.05). The Newcombe interval excludes 0 in nearly the same cases, not always exactly.
     */
    public boolean beyondNoise() {
      return mcnemarP < 1 - CONFIDENCE;
    }
  }

  /**
   * The paired difference of two runs' accuracies over the cases both judged; see {@link PairedDifference}
   * for the methods.
   *
   * @param bothPassed cases passed in both runs
   * @param onlyA cases passed in run A only
   * @param onlyB cases passed in run B only
   * @param neitherPassed cases passed in neither
   * @return empty when there are no cases
   * @throws IllegalArgumentException if a count is negative
   */
  public static Optional<PairedDifference> pairedDifference(long bothPassed, long onlyA, long onlyB, long neitherPassed) {
    if (bothPassed < 0 || onlyA < 0 || onlyB < 0 || neitherPassed < 0) {
      throw new IllegalArgumentException("paired counts must be >= 0: both " + bothPassed + ", only A " + onlyA
          + ", only B " + onlyB + ", neither " + neitherPassed);
    }
    long n = bothPassed + onlyA + onlyB + neitherPassed;
    if (n == 0) {
      return Optional.empty();
    }
    Estimate a = proportion(bothPassed + onlyA, n).orElseThrow();
    Estimate b = proportion(bothPassed + onlyB, n).orElseThrow();
    double d = b.value() - a.value();
    // Newcombe's phi: the correlation of the two runs' verdicts over the cases; 0 when a margin is empty,
    // where the correlation is undefined and the interval falls back to the independent one.
    double margins = (double) (bothPassed + onlyA) * (onlyB + neitherPassed) * (bothPassed + onlyB) * (onlyA + neitherPassed);
    double phi = margins == 0
        ? 0
        : ((double) bothPassed * neitherPassed - (double) onlyA * onlyB) / Math.sqrt(margins);
    double bDown = b.value() - b.low();
    double bUp = b.high() - b.value();
    double aDown = a.value() - a.low();
    double aUp = a.high() - a.value();
    double low = d - Math.sqrt(Math.max(0, bDown * bDown - 2 * phi * bDown * aUp + aUp * aUp));
    double high = d + Math.sqrt(Math.max(0, bUp * bUp - 2 * phi * bUp * aDown + aDown * aDown));
    double discordant = onlyA + onlyB;
    double se = Math.sqrt(Math.max(0, discordant - (double) (onlyB - onlyA) * (onlyB - onlyA) / n)) / n;
    Estimate difference = new Estimate(d, n, se, Math.max(-1, low), Math.min(1, high), CONFIDENCE, NEWCOMBE_PAIRED);
    return Optional.of(new PairedDifference(bothPassed, onlyA, onlyB, neitherPassed, difference, mcnemarExactP(onlyA, onlyB)));
  }

  /** McNemar's exact two-sided p-value for {@code b} and {@code c} discordant pairs. */
  private static double mcnemarExactP(long b, long c) {
    long m = b + c;
    if (m == 0) {
      return 1.0;
    }
    if (m > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("too many discordant cases for the exact test: " + m);
    }
    double tail = new BinomialDistribution(null, (int) m, 0.5).cumulativeProbability((int) Math.min(b, c));
    return Math.min(1.0, 2 * tail);
  }
}
