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

  /** What stands for no estimate (nothing judged or scored yet). */
  static final String NONE = "-";

  /**
   * An estimate as Tally's JSON carries it ({@code summary.json} and so the API's summary, and the API's
   * runs): its figures, as {@link Estimate} has them, with {@code text}, the same figures as the command line
   * writes them, and {@code brief}, the value alone as a table's column or a dashboard's card shows it.
   * Readers that show an estimate (the dashboard, {@code tally run}'s table, the HTML report) show these,
   * so that the words and the rounding are made here alone.
   *
   * @param value the estimate ({@link Estimate#value})
   * @param n how many cases or samples it is from
   * @param standardError its standard error, or null for a mean of one score
   * @param low its interval's lower end, null exactly when {@code standardError} is
   * @param high its interval's upper end, null exactly when {@code standardError} is
   * @param confidence the interval's level (0.95)
   * @param method how the interval was made ({@link Estimates#WILSON}...)
   * @param text the estimate in words: {@link #percent}, {@link #mean} or {@link #passAtK} of it
   * @param brief its value alone: {@link #percentOnly} or {@link #meanOnly} of it
   */
  public record Written(double value, long n, Double standardError, Double low, Double high, double confidence, String method,
      String text, String brief) {
    /** {@code e} with {@link #percent}'s text (a proportion); null for null. */
    public static Written percent(Estimate e) {
      return e == null ? null : of(e, EstimateText.percent(e), percentOnly(e));
    }

    /** {@code e} with {@link #mean}'s text (a mean of scores); null for null. */
    public static Written mean(Estimate e) {
      return e == null ? null : of(e, EstimateText.mean(e), meanOnly(e));
    }

    /** {@code e} with {@link #passAtK}'s text (a mean over samples); null for null. */
    public static Written passAtK(Estimate e) {
      return e == null ? null : of(e, EstimateText.passAtK(e), meanOnly(e));
    }

    /**
     * The text of a written estimate read back from JSON ({@code summary.json}'s {@code accuracy}, say):
     * its {@code text}, or {@code -} for none (a missing or null node), as for a null estimate.
     */
    public static String textOf(com.fasterxml.jackson.databind.JsonNode written) {
      return written == null || !written.hasNonNull("text") ? NONE : written.get("text").asText();
    }

    /** The figures without the text. */
    public Estimate estimate() {
      return new Estimate(value, n, standardError, low, high, confidence, method);
    }

    private static Written of(Estimate e, String text, String brief) {
      return new Written(e.value(), e.n(), e.standardError(), e.low(), e.high(), e.confidence(), e.method(), text, brief);
    }
  }

  /** A proportion as a percentage: {@code 86.0% (95% CI 82.1-89.3%, Wilson, n=300)}; {@code -} for none. */
  public static String percent(Estimate e) {
    if (e == null) {
      return NONE;
    }
    return String.format(Locale.ROOT, "%.1f%% (%s %.1f-%.1f%%, %s, n=%d)", 100 * e.value(), level(e), 100 * e.low(),
        100 * e.high(), methodName(e), e.n());
  }

  /** A proportion as a bare percentage, for a table's column: {@code 86.0%}; {@code -} for none. */
  public static String percentOnly(Estimate e) {
    return e == null ? NONE : String.format(Locale.ROOT, "%.1f%%", 100 * e.value());
  }

  /** A mean as a bare value to three places, for a table's column: {@code 0.860}; {@code -} for none. */
  public static String meanOnly(Estimate e) {
    return e == null ? NONE : String.format(Locale.ROOT, "%.3f", e.value());
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
      return NONE;
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
      return NONE;
    }
    Estimate e = d.difference();
    return String.format(Locale.ROOT, "%+.1f points (%s %+.1f to %+.1f, %s, n=%d; McNemar p=%.4f: %s)",
        100 * e.value(), level(e), 100 * e.low(), 100 * e.high(), methodName(e), e.n(),
        d.mcnemarP(), d.beyondNoise() ? "beyond the noise" : "within the noise");
  }
}
