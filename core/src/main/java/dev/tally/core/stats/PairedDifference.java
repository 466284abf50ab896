package dev.tally.core.stats;

/**
 * How much run B's accuracy differs from run A's on the same cases, and whether that is beyond the noise.
 * Made only by {@link Estimates#pairedDifference}.
 *
 * @param difference B's accuracy minus A's over the paired cases, in [-1, 1]
 * @param n how many cases both runs judged (at least 1)
 * @param onlyA cases A passed and B did not (pass to not-pass, read from A to B)
 * @param onlyB cases B passed and A did not (not-pass to pass)
 * @param standardError the interval's standard error (of the adjusted table, see {@link Estimates#pairedDifference})
 * @param low the 95% interval's lower end
 * @param high the 95% interval's upper end
 * @param confidence the interval's confidence level: {@link Estimates#CONFIDENCE} (0.95)
 * @param method how the interval was made: {@link Estimates#AGRESTI_MIN}
 * @param pValue McNemar's exact two-sided p-value of "the two runs are equally accurate"
 */
public record PairedDifference(
    double difference, long n, long onlyA, long onlyB, double standardError, double low, double high,
    double confidence, String method, double pValue) {

  /**
   * Whether the difference is beyond the noise: McNemar's p-value is below {@code 1 - confidence} (0.05).
   * The test, not the interval, decides, because the exact test is the one that holds for few changed cases.
   */
  public boolean beyondNoise() {
    return pValue < 1 - confidence;
  }
}
