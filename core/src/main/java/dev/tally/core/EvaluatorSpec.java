package dev.tally.core;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * How a run's cases are evaluated: which evaluator, its options, and one attempt's time budget.
 *
 * @param kind the evaluator's name ({@code exec}, {@code sleep}, {@code noop})
 * @param options evaluator options, e.g. {@code cmd} for exec or {@code millis} for sleep (copied,
 *     unmodifiable)
 * @param caseTimeout the wall-clock budget of one attempt; from {@link #MIN_CASE_TIMEOUT} (1 ms) to {@link Ticker#MAX_DURATION} ({@link #checkCaseTimeout})
 */
public record EvaluatorSpec(String kind, Map<String, String> options, Duration caseTimeout) {
  /**
   * The option that sets how many first cases all erroring alike pause a run (fail fast; {@code 0} turns
   * it off). A run setting kept among the options so that it travels and is stored with the run.
   */
  public static final String FAIL_FAST_OPTION = "fail-fast";

  /** Fail fast's number of cases when the option is absent: the product's default. */
  public static final int DEFAULT_FAIL_FAST_CASES = 20;

  /** The most cases fail fast may wait for: beyond it, a run is better judged by a person. */
  public static final int MAX_FAIL_FAST_CASES = 10_000;

  /**
   * Fail fast's number of cases for a run with these options: the option's value, else {@link
   * #DEFAULT_FAIL_FAST_CASES}.
   *
   * @throws IllegalArgumentException naming the option if its value is not a whole number from 0 to
   *     {@link #MAX_FAIL_FAST_CASES}
   */
  public static int failFastCases(Map<String, String> options) {
    String v = options.get(FAIL_FAST_OPTION);
    if (v == null) {
      return DEFAULT_FAIL_FAST_CASES;
    }
    try {
      int n = Integer.parseInt(v.strip());
      if (n >= 0 && n <= MAX_FAIL_FAST_CASES) {
        return n;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw failFastRefused(v);
  }

  /**
   * The option's value for fail fast after {@code cases} (the command line's and the API's setting).
   *
   * @throws IllegalArgumentException naming the option if {@code cases} is not from 0 to {@link
   *     #MAX_FAIL_FAST_CASES}
   */
  public static String failFastOption(int cases) {
    if (cases < 0 || cases > MAX_FAIL_FAST_CASES) {
      throw failFastRefused(Integer.toString(cases));
    }
    return Integer.toString(cases);
  }

  private static IllegalArgumentException failFastRefused(String value) {
    return new IllegalArgumentException("--" + FAIL_FAST_OPTION + " must be a whole number from 0 (off) to "
        + MAX_FAIL_FAST_CASES + ", got '" + value + "'");
  }

  /** The shortest case timeout: the store keeps a run's timeout in whole milliseconds. */
  public static final Duration MIN_CASE_TIMEOUT = Duration.ofMillis(1);

  /**
   * The rule for a case timeout, which every way of making a run checks with it (the command line, the API):
   * at least {@link #MIN_CASE_TIMEOUT} (a shorter one would be stored as 0) and at most {@link
   * Ticker#MAX_DURATION}.
   *
   * @param caseTimeout the timeout given
   * @return {@code caseTimeout}
   * @throws IllegalArgumentException if it is null, shorter than 1 ms or longer than the maximum; the message
   *     says the bounds and the value, in {@link DurationText}'s words, without naming the option
   */
  public static Duration checkCaseTimeout(Duration caseTimeout) {
    if (caseTimeout == null || caseTimeout.compareTo(MIN_CASE_TIMEOUT) < 0 || caseTimeout.compareTo(Ticker.MAX_DURATION) > 0) {
      throw new IllegalArgumentException("must be from " + DurationText.text(MIN_CASE_TIMEOUT) + " to "
          + Ticker.MAX_DURATION.toDays() + " days, got "
          + (caseTimeout == null ? "nothing" : DurationText.text(caseTimeout)));
    }
    return caseTimeout;
  }

  public EvaluatorSpec {
    Objects.requireNonNull(kind, "kind");
    options = Map.copyOf(options);
    try {
      checkCaseTimeout(caseTimeout);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("caseTimeout " + e.getMessage(), e);
    }
  }
}
