package dev.tally.core.stats;

import java.util.Locale;

/**
 * How Tally writes an {@link Estimate} for people (the command line, the HTML report, {@code tally compare}): the value, then its 95% interval, the
 * interval's method and the number of cases. The figures themselves come from {@link Estimates}, their one
 * owner.
 *
 * <p>Thread-safety: stateless.
 */
public final class EstimateText {
  private EstimateText() {}

  /** A proportion as a percentage: {@code 86.0% (95% CI 82.1-89.3%, Wilson, n=300)}; {@code -} for none. */
  public static String percent(Estimate e) {
    if (e == null) {
      return "-";
    }
    return String.format(Locale.ROOT, "%.1f%% (%s %.1f-%.1f%%, %s, n=%d)", 100 * e.value(), level(e), 100 * e.low(),
        100 * e.high(), methodName(e), e.n());
  }

  /** A proportion as a bare percentage, for a table's column: {@code 86.0%}; {@code -} for none. */
  public static String percentOnly(Estimate e) {
    return e == null ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * e.value());
  }

  /**
   * A mean: {@code 0.860 (SE 0.020, 95% CI 0.821 to 0.899, Student's t, n=300 scored)}; a mean of one score
   * has no interval: {@code 0.860 (n=1 scored)}; {@code -} for none. "to", not a hyphen, because a t interval's low end
   * may be negative ({@code -4.140 to 5.390} reads as it should; {@code -4.140-5.390} does not).
   */
  public static String mean(Estimate e) {
    // "scored": a mean is over the cases that reported a score, often fewer than the run's (accuracy's n).
    return meanOver(e, "scored");
  }

  /**
   * pass@k, a mean over samples (a case's epochs make one sample): {@code 0.860 (SE 0.020, 95% CI 0.821 to
   * 0.899, Student's t, n=50 samples)}; {@code -} for none.
   */
  public static String passAtK(Estimate e) {
    return meanOver(e, "samples");
  }

  private static String meanOver(Estimate e, String what) {
    if (e == null) {
      return "-";
    }
    if (e.standardError() == null) {
      return String.format(Locale.ROOT, "%.3f (n=%d %s)", e.value(), e.n(), what);
    }
    return String.format(Locale.ROOT, "%.3f (SE %.3f, %s %.3f to %.3f, %s, n=%d %s)", e.value(), e.standardError(), level(e),
        e.low(), e.high(), methodName(e), e.n(), what);
  }

  private static String level(Estimate e) {
    return String.format(Locale.ROOT, "%.0f%% CI", 100 * e.confidence());
  }

  private static String methodName(Estimate e) {
    return switch (e.method()) {
      case Estimates.WILSON -> "Wilson";
      case Estimates.STUDENT_T -> "Student's t";
      case Estimates.NEWCOMBE_PAIRED -> "Newcombe paired";
      default -> e.method();
    };
  }

  /**
   * A paired difference in percentage points: {@code +4.0 points (95% CI -1.2 to +9.1, Newcombe paired,
   * n=300; McNemar p=0.1200: within the noise)}; {@code -} for none.
   */
  public static String difference(Estimates.PairedDifference d) {
    if (d == null) {
      return "-";
    }
    Estimate e = d.difference();
    return String.format(Locale.ROOT, "%+.1f points (%s %+.1f to %+.1f, %s, n=%d; McNemar p=%.4f: %s)",
        100 * e.value(), level(e), 100 * e.low(), 100 * e.high(), methodName(e), e.n(),
        d.mcnemarP(), d.beyondNoise() ? "beyond the noise" : "within the noise");
  }
}
