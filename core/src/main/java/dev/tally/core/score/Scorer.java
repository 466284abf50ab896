package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Judges one answer against one case: the scorer of a run, named on the command line ({@code --scorer
 * exact:ignore-case}) and made by {@link Scorers#parse}.
 *
 * <p>A case is a JSON object with the conventional fields {@code target} (a string, or a list of strings any
 * of which is right), {@code choices} (a list of strings) and any others; each scorer says which it reads.
 *
 * <p>Thread-safety: every built-in scorer is immutable and may be called from any number of threads at once.
 */
public interface Scorer {
  /**
   * The scorer's name in a run: the key of its result ({@code scores.NAME}); its kind ({@code exact}) unless
   * the spec gave {@code name=}.
   */
  String name();

  /**
   * Scores one answer.
   *
   * @param caseFields the case, a JSON object
   * @param answer the text the evaluator answered; {@code null} is read as the empty answer
   * @return the score, the verdict, what was read from the answer and why
   * @throws ScoringException if the case lacks what this scorer needs or holds it in the wrong shape (no
   *     {@code target}, a target that is not a number for {@code numeric}, ...): the case's fault, not the
   *     answer's, so the caller records it as the case's error, not a failure
   * @throws NullPointerException if {@code caseFields} is null
   */
  ScoreResult score(JsonNode caseFields, String answer);

  /**
   * Scores one answer, with a grader model at hand for a scorer that asks one ({@link ModelGradedScorer});
   * every other scorer ignores it.
   *
   * @throws ScoringException as {@link #score(JsonNode, String)}
   * @throws Grader.Unavailable if the grader cannot answer now (the attempt ends, retryably)
   */
  default ScoreResult score(JsonNode caseFields, String answer, Grader grader) {
    return score(caseFields, answer);
  }
}
