package dev.tally.core;

import java.util.Objects;

/**
 * What an evaluator made of one case: a final result, recorded once and never retried.
 *
 * @param verdict pass, fail or error
 * @param score a finite number the evaluator reported, or {@code null} when it reported none (a score feeds
 *     the run's mean, which an infinity or NaN would poison)
 * @param outputTail a bounded tail of the case's standard output, or the evaluator's message for an
 *     {@code error} it made itself (may be empty, never null)
 * @param durationMillis how long the attempt ran, in milliseconds, {@code >= 0}
 * @param answer the text the case's scorers judge, when the evaluator named one apart from its output (an
 *     exec verdict line's {@code "answer"}); {@code null} when it did not
 * @param fieldsJson the evaluator's other structured fields (an exec verdict line's fields besides
 *     {@code verdict}, {@code score} and {@code answer}), as the text of one JSON object; {@code null} when
 *     there are none
 * @param exitCode the exit code of the case's process, for an evaluator that runs one; {@code null}
 *     otherwise
 * @param stderrTail a bounded tail of the case's standard error, kept apart from its output (may be empty,
 *     never null)
 */
public record Outcome(
    Verdict verdict,
    Double score,
    String outputTail,
    long durationMillis,
    String answer,
    String fieldsJson,
    Integer exitCode,
    String stderrTail) {
  /**
   * Characters of output kept per case, of stdout and of stderr each, by every evaluator and by whatever
   * prefixes a message to an output ({@link dev.tally.core.score.Judge}). The tails ride in every Result
   * frame, wait in the worker's outbox until acked and are stored with every job; 4 KiB holds the end of a
   * typical traceback or test report while keeping a full outbox and a million-job run's store small.
   */
  public static final int OUTPUT_TAIL_LIMIT = 4096;

  public Outcome {
    Objects.requireNonNull(verdict, "verdict");
    outputTail = outputTail == null ? "" : outputTail;
    stderrTail = stderrTail == null ? "" : stderrTail;
    if (score != null && !Double.isFinite(score)) {
      throw new IllegalArgumentException("score must be a finite number, got " + score);
    }
    if (durationMillis < 0) {
      throw new IllegalArgumentException("durationMillis must be >= 0, got " + durationMillis);
    }
    // A cheap shape check: whoever reads the fields parses them (and keeps them as text if that fails).
    if (fieldsJson != null) {
      String t = fieldsJson.strip();
      if (!t.startsWith("{") || !t.endsWith("}")) {
        throw new IllegalArgumentException("fieldsJson must be the text of a JSON object, got "
            + (t.length() <= 40 ? t : t.substring(0, 40) + "..."));
      }
    }
  }

  /** An outcome with a verdict, a score, an output tail and a duration only (no answer, fields, exit code). */
  /**
   * This outcome with another duration, every other field as it is.
   *
   * @param millis how long the attempt ran, in milliseconds
   * @throws IllegalArgumentException if {@code millis} is negative
   */
  public Outcome withDurationMillis(long millis) {
    return new Outcome(verdict, score, outputTail, millis, answer, fieldsJson, exitCode, stderrTail);
  }

  public Outcome(Verdict verdict, Double score, String outputTail, long durationMillis) {
    this(verdict, score, outputTail, durationMillis, null, null, null, "");
  }
}
