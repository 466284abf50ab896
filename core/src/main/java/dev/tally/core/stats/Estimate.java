package dev.tally.core.stats;

/**
 * A figure estimated from a sample of cases, with its uncertainty: the value, the number of cases it was
 * estimated from, its standard error and a 95% confidence interval, and the method that made the
 * interval. Made only by {@link Estimates}.
 *
 * @param value the estimate: a proportion in [0, 1], a mean score, or a difference of two proportions in [-1, 1]
 * @param n how many cases it is estimated from (at least 1)
 * @param standardError the estimate's standard error; {@code null} when one case cannot give one (a mean
 *     of one score)
 * @param low the 95% interval's lower end; {@code null} exactly when {@code standardError} is
 * @param high the 95% interval's upper end; {@code null} exactly when {@code standardError} is
 * @param confidence the interval's confidence level: {@link Estimates#CONFIDENCE} (0.95)
 * @param method how the interval was made: {@link Estimates#WILSON}, {@link Estimates#STUDENT_T} or {@link
 *     Estimates#NEWCOMBE_PAIRED}
 */
public record Estimate(
    double value, long n, Double standardError, Double low, Double high, double confidence, String method) {}
