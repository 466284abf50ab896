package dev.tally.core;

import java.util.Objects;

/**
 * What an evaluator made of one case: a final result, recorded once and never retried.
 *
 * @param verdict pass, fail or error
 * @param score a finite number the evaluator reported, or {@code null} when it reported none (a score feeds
 *     the run's mean, which an infinity or NaN would poison)
 * @param outputTail a bounded tail of the case's output (may be empty, never null)
 * @param durationMillis how long the attempt ran, in milliseconds, {@code >= 0}
 */
public record Outcome(Verdict verdict, Double score, String outputTail, long durationMillis) {
  public Outcome {
    Objects.requireNonNull(verdict, "verdict");
    outputTail = outputTail == null ? "" : outputTail;
    if (score != null && !Double.isFinite(score)) {
      throw new IllegalArgumentException("score must be a finite number, got " + score);
    }
    if (durationMillis < 0) {
      throw new IllegalArgumentException("durationMillis must be >= 0, got " + durationMillis);
    }
  }
}
