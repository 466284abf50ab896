package dev.tally.core.score;

import dev.tally.core.InfraFailure;
import java.util.Objects;

/**
 * Asks a grader model for its reply to a grading prompt, for a {@link ModelGradedScorer}: the one scorer
 * that is not pure. The worker gives {@link Judge} a grader that calls the endpoint and journals the reply
 * like any paid call (so a redelivered case never pays its grader twice); where no model may be asked (a
 * rescore), {@link #NONE} says so and the column holds the reason.
 *
 * <p>Thread-safety: a grader serves one attempt, on its slot's thread.
 */
@FunctionalInterface
public interface Grader {
  /** A grader that asks nobody: a model-graded column says it was not graded. */
  Grader NONE = (scorer, prompt) -> {
    throw new ScoringException("model-graded scorer " + scorer.name() + " was not graded: no grader model may be asked"
        + " here (a rescore asks no model)");
  };

  /**
   * The grader model's reply to {@code prompt}.
   *
   * @param scorer the scorer asking (its model, endpoint and key variable)
   * @param prompt the grading prompt ({@link ModelGradedScorer#prompt})
   * @return the reply's text
   * @throws ScoringException if the grader refuses the request for a reason of the case's (a 400, a 401):
   *     the column's error
   * @throws Unavailable if the grader cannot answer now (rate limited, overloaded, unreachable): the
   *     attempt ends with its failure and the case is tried again
   */
  String reply(ModelGradedScorer scorer, String prompt) throws ScoringException;

  /** The grader cannot answer now: the attempt ends with {@link #failure()}, retryably. */
  final class Unavailable extends RuntimeException {
    private final transient InfraFailure failure;

    public Unavailable(InfraFailure failure) {
      super(failure.detail());
      this.failure = Objects.requireNonNull(failure, "failure");
    }

    /** How the attempt ends. */
    public InfraFailure failure() {
      return failure;
    }
  }
}
