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
 * @param caseTimeout the wall-clock budget of one attempt; positive, at most {@link Ticker#MAX_DURATION}
 */
public record EvaluatorSpec(String kind, Map<String, String> options, Duration caseTimeout) {
  public EvaluatorSpec {
    Objects.requireNonNull(kind, "kind");
    options = Map.copyOf(options);
    if (caseTimeout == null || caseTimeout.isZero() || caseTimeout.isNegative()
        || caseTimeout.compareTo(Ticker.MAX_DURATION) > 0) {
      throw new IllegalArgumentException("caseTimeout must be positive and at most " + Ticker.MAX_DURATION.toDays()
          + " days, got " + caseTimeout);
    }
  }
}
