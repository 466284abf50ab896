package dev.tally.core.score;

import java.util.Objects;

/**
 * What a scorer made of one answer.
 *
 * @param value the score: 1 for a pass and 0 for a fail for every built-in scorer; finite
 * @param passed the verdict
 * @param extracted what the scorer read from the answer and compared (the last number, the choice letter,
 *     the normalised text); {@code null} when it found nothing to read. At most {@link #MAX_TEXT_CHARS}
 *     characters: longer text is cut and ends in {@code …}
 * @param explanation a short sentence for a person: why it passed or failed; at most {@link
 *     #MAX_TEXT_CHARS} characters
 */
public record ScoreResult(double value, boolean passed, String extracted, String explanation) {
  /**
   * The longest {@code extracted} or {@code explanation} kept: each result is stored with the case's outcome
   * and shown in reports, where it is a hint, not a copy of the answer (the answer is kept apart).
   */
  public static final int MAX_TEXT_CHARS = 500;

  /**
   * @throws IllegalArgumentException if {@code value} is not finite
   * @throws NullPointerException if {@code explanation} is null
   */
  public ScoreResult {
    if (!Double.isFinite(value)) {
      throw new IllegalArgumentException("a score must be finite, got " + value);
    }
    Objects.requireNonNull(explanation, "explanation");
    extracted = extracted == null ? null : cut(extracted);
    explanation = cut(explanation);
  }

  /** A pass scored 1. */
  static ScoreResult pass(String extracted, String explanation) {
    return new ScoreResult(1, true, extracted, explanation);
  }

  /** A fail scored 0. */
  static ScoreResult fail(String extracted, String explanation) {
    return new ScoreResult(0, false, extracted, explanation);
  }

  private static String cut(String text) {
    if (text.length() <= MAX_TEXT_CHARS) {
      return text;
    }
    int end = MAX_TEXT_CHARS - 1;
    if (Character.isHighSurrogate(text.charAt(end - 1))) {
      end--;
    }
    return text.substring(0, end) + "…";
  }
}
