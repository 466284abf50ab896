package dev.tally.worker.eval;

import dev.tally.core.score.Judge;
import java.util.Objects;

/**
 * An evaluator whose outcomes are judged by a run's scorers ({@code --scorer}): the evaluator answers, the
 * scorers judge the answer against the case. How an answer becomes a verdict, a score and the {@code
 * scores.NAME} columns is {@link Judge}'s rule (which {@code tally rescore} applies again to stored
 * outcomes); an evaluator's {@code error} outcome, and every retryable failure, pass through unscored. A
 * model-graded scorer asks its grader through a {@link ChatGrader} of the attempt (journalled); a grader that
 * cannot answer now ends the attempt with its failure (rate limited: the fleet backs off).
 *
 * <p>Thread-safety: as thread-safe as the evaluator it wraps (a judge is immutable).
 */
final class ScoringEvaluator implements Evaluator {
  private final Evaluator evaluator;
  private final Judge judge;

  /**
   * @param evaluator what answers each case
   * @param judge the run's scorers, as their judge
   */
  ScoringEvaluator(Evaluator evaluator, Judge judge) {
    this(evaluator, judge, System::getenv);
  }

  /** @param environment the worker's environment variables (a grader's key); tests pass their own */
  ScoringEvaluator(Evaluator evaluator, Judge judge, java.util.function.Function<String, String> environment) {
    this.evaluator = Objects.requireNonNull(evaluator, "evaluator");
    this.judge = Objects.requireNonNull(judge, "judge");
    this.environment = Objects.requireNonNull(environment, "environment");
  }

  private final java.util.function.Function<String, String> environment;

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    Evaluation evaluation = evaluator.evaluate(ctx);
    if (!(evaluation instanceof Evaluation.Finished finished)) {
      return evaluation;
    }
    try {
      return new Evaluation.Finished(judge.judge(finished.outcome(), ctx.caseJson(), new ChatGrader(ctx, environment)));
    } catch (dev.tally.core.score.Grader.Unavailable e) {
      return new Evaluation.Failed(e.failure(), ctx.elapsedMillis());
    }
  }
}
