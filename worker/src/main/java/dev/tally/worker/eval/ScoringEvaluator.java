package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.score.ScoreResult;
import dev.tally.core.score.Scorer;
import dev.tally.core.score.ScoringException;
import java.io.IOException;
import java.util.List;
import java.util.Objects;

/**
 * An evaluator whose outcomes are judged by a run's scorers ({@code --scorer}): the evaluator answers, the
 * scorers judge the answer against the case.
 *
 * <p>For an outcome the evaluator finished with {@code pass} or {@code fail}: the answer is the outcome's own
 * ({@link Outcome#answer}, an exec verdict line's {@code "answer"}), else its stdout tail with its trailing
 * white space stripped. Each scorer's result goes into the outcome's fields as {@code scores.NAME} =
 * {@code {"value", "passed", "extracted", "explanation"}} (the evaluator's own fields are kept beside it); the
 * first scorer's result is the case's verdict ({@code pass} or {@code fail}) and score. A case the first
 * scorer cannot judge ({@link ScoringException}: no {@code target}, say) is the case's {@code error}, naming
 * the scorer, and so is a case whose JSON cannot be read; a case another scorer cannot judge keeps its
 * verdict, and that scorer's column says why ({@code {"error": "..."}}). An evaluator's {@code error} outcome, and every retryable
 * failure, pass through unscored: there is no answer to judge.
 *
 * <p>Thread-safety: as thread-safe as the evaluator it wraps (the scorers are).
 */
final class ScoringEvaluator implements Evaluator {
  private final Evaluator evaluator;
  private final List<Scorer> scorers;

  /**
   * @param evaluator what answers each case
   * @param scorers the run's scorers, in order (the first decides the verdict); not empty
   */
  ScoringEvaluator(Evaluator evaluator, List<Scorer> scorers) {
    this.evaluator = Objects.requireNonNull(evaluator, "evaluator");
    if (scorers.isEmpty()) {
      throw new IllegalArgumentException("a scoring evaluator needs at least one scorer");
    }
    this.scorers = List.copyOf(scorers);
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    Evaluation evaluation = evaluator.evaluate(ctx);
    if (!(evaluation instanceof Evaluation.Finished finished) || finished.outcome().verdict() == Verdict.ERROR) {
      return evaluation;
    }
    return new Evaluation.Finished(score(finished.outcome(), ctx.caseJson()));
  }

  private Outcome score(Outcome o, String caseJson) {
    String answer = o.answer() != null ? o.answer() : o.outputTail().stripTrailing();
    ObjectNode fields;
    JsonNode caseFields;
    try {
      caseFields = CaseJson.MAPPER.readTree(caseJson);
      JsonNode given = o.fieldsJson() == null ? null : CaseJson.MAPPER.readTree(o.fieldsJson());
      fields = given instanceof ObjectNode object ? object : CaseJson.MAPPER.createObjectNode();
    } catch (IOException e) {
      return error(o, "cannot read the case or the evaluator's fields to score them: " + e.getMessage());
    }
    ObjectNode scores = fields.putObject("scores");
    ScoreResult first = null;
    for (Scorer scorer : scorers) {
      ScoreResult r;
      try {
        r = scorer.score(caseFields, answer);
      } catch (ScoringException e) {
        if (first == null) { // the scorer that decides: without its judgement the case has no verdict
          return error(o, "scorer " + scorer.name() + " cannot judge this case: " + e.getMessage());
        }
        scores.putObject(scorer.name()).put("error", e.getMessage()); // another column: said there, the verdict stands
        continue;
      }
      ObjectNode entry = scores.putObject(scorer.name());
      entry.put("value", r.value());
      entry.put("passed", r.passed());
      entry.put("extracted", r.extracted());
      entry.put("explanation", r.explanation());
      first = first == null ? r : first;
    }
    return new Outcome(first.passed() ? Verdict.PASS : Verdict.FAIL, first.value(), o.outputTail(), o.durationMillis(),
        answer, fields.toString(), o.exitCode(), o.stderrTail());
  }

  /** The case's {@code error}: the message first, then what the evaluator printed. */
  private static Outcome error(Outcome o, String message) {
    String tail = o.outputTail();
    int room = Math.max(0, ExecEvaluator.OUTPUT_TAIL_LIMIT - message.length() - 1);
    String output = message + "\n" + (tail.length() <= room ? tail : tail.substring(tail.length() - room));
    return new Outcome(Verdict.ERROR, null, output, o.durationMillis(), o.answer(), o.fieldsJson(), o.exitCode(),
        o.stderrTail());
  }
}
