package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The one rule that turns an answer and a run's scorers into the case's verdict, score and score columns:
 * what a worker applies to each outcome its evaluator finishes ({@link #judge}), and what {@code tally
 * rescore} applies again to the outcomes a store keeps ({@link #rejudge}), so that a rescored run reads as if
 * it had been run with the new scorers.
 *
 * <h2>The rule</h2>
 *
 * <ul>
 *   <li><b>The answer</b> is the outcome's own ({@link Outcome#answer}: an exec verdict line's {@code
 *       "answer"}, a model's completion), else its output tail with trailing white space stripped.
 *   <li><b>Columns.</b> Each scorer's result goes into the outcome's fields as {@code scores.NAME} = {@code
 *       {"value", "passed", "extracted", "explanation"}}; the evaluator's own fields are kept beside it, and a
 *       {@code scores} object of an earlier judgement is replaced whole.
 *   <li><b>Verdict.</b> The first scorer's result is the case's verdict ({@code pass} or {@code fail}) and
 *       score; the judged answer is kept as the outcome's answer.
 *   <li><b>A case the first scorer cannot judge</b> ({@link ScoringException}: no {@code target}, say) is the
 *       case's {@code error}: its output starts with {@code scorer NAME cannot judge this case: WHY} on a line
 *       of its own, followed by what the evaluator printed, and its column is {@code {"error": WHY}}. The answer
 *       is kept, so a later rescore can judge it again; the message is taken off again before it does. A case
 *       another scorer cannot judge keeps its verdict, and that scorer's column says why.
 *   <li><b>An evaluator's own {@code error}</b> (a command not found, a 401) is not judged: there is no answer.
 *       A case whose JSON, or whose evaluator's fields, cannot be read is the case's error, saying so (and
 *       is not judged again: its column is not there).
 * </ul>
 *
 * <p>Pure but for the {@link Grader} a model-graded scorer asks, which the caller gives: no I/O of its own, no
 * clock (scorers are stopped by budgets, not time). Thread-safety: immutable; the
 * scorers are thread-safe, so one judge serves every slot of a run.
 */
public final class Judge {
  /** The field of an outcome's fields that holds the scorers' columns. */
  public static final String SCORES_FIELD = "scores";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CANNOT_JUDGE = " cannot judge this case: ";

  private final List<String> specs;
  private final List<Scorer> scorers;

  Judge(List<String> specs, List<Scorer> scorers) { // package-private: a test gives its own scorers
    this.specs = specs;
    this.scorers = scorers;
  }

  /**
   * The judge of a run's scorers.
   *
   * @param specs one spec per scorer in {@link ScorerSpec}'s grammar, in order (the first decides the
   *     verdict), with any file they name already inlined ({@link Scorers#withFilesInlined}); not empty
   * @throws IllegalArgumentException if {@code specs} is empty, or {@link Scorers#parse(List)} refuses them
   *     (the message names the spec at fault)
   */
  public static Judge of(List<String> specs) {
    Objects.requireNonNull(specs, "specs");
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("a judge needs at least one scorer");
    }
    return new Judge(List.copyOf(specs), Scorers.parse(specs));
  }

  /** The scorer specs, in order, as given. */
  public List<String> specs() {
    return specs;
  }

  /** The value of the evaluator option {@link Scorers#OPTION} that carries these scorers. */
  public String optionValue() {
    return Scorers.optionValue(specs);
  }

  /**
   * Judges an outcome an evaluator has just finished, by the rule in the class doc.
   *
   * @param evaluated what the evaluator made of the case
   * @param caseJson the case, a JSON object's text
   * @return the judged outcome; {@code evaluated} itself when it is the evaluator's {@code error}
   */
  public Outcome judge(Outcome evaluated, String caseJson) {
    return judge(evaluated, caseJson, Grader.NONE);
  }

  /**
   * Judges an outcome as {@link #judge(Outcome, String)}, a model-graded scorer asking {@code grader}.
   *
   * @throws Grader.Unavailable if the grader cannot answer now: the attempt ends with its failure
   */
  public Outcome judge(Outcome evaluated, String caseJson, Grader grader) {
    if (evaluated.verdict() == Verdict.ERROR) {
      return evaluated;
    }
    return score(evaluated, answerOf(evaluated.answer(), evaluated.outputTail()), evaluated.outputTail(), caseJson,
        grader);
  }

  /**
   * Judges a stored outcome again with these scorers ({@code tally rescore}): a {@code pass} or {@code fail}
   * is judged as {@link #judge} would; an {@code error} that an earlier judgement made (its first scorer
   * could not judge the case) is judged again from the answer it kept, with that judgement's message taken
   * off its output; the evaluator's own {@code error} is left as it is.
   *
   * @param stored the outcome as recorded
   * @param caseJson the case, a JSON object's text
   * @return the outcome judged again, or empty if the case keeps its outcome
   */
  public Optional<Outcome> rejudge(Outcome stored, String caseJson) {
    if (stored.verdict() != Verdict.ERROR) {
      return Optional.of(judge(stored, caseJson, Grader.NONE));
    }
    return scorersError(stored).map(output ->
        score(stored, answerOf(stored.answer(), output), output, caseJson, Grader.NONE));
  }

  private static String answerOf(String answer, String outputTail) {
    return answer != null ? answer : outputTail.stripTrailing();
  }

  /**
   * The output an evaluator printed, if {@code o} is an error a judgement made (its message line, then that
   * output, and its scorer's column holding the same message); else empty.
   */
  private static Optional<String> scorersError(Outcome o) {
    String out = o.outputTail();
    int at = out.indexOf(CANNOT_JUDGE);
    if (!out.startsWith("scorer ") || at < 0 || o.fieldsJson() == null) {
      return Optional.empty();
    }
    String name = out.substring("scorer ".length(), at);
    try {
      JsonNode why = JSON.readTree(o.fieldsJson()).path(SCORES_FIELD).path(name).path("error");
      String line = "scorer " + name + CANNOT_JUDGE + why.asText() + "\n";
      return why.isTextual() && out.startsWith(line) ? Optional.of(out.substring(line.length())) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private Outcome score(Outcome o, String answer, String output, String caseJson, Grader grader) {
    ObjectNode fields;
    JsonNode caseFields;
    try {
      caseFields = JSON.readTree(caseJson);
      JsonNode given = o.fieldsJson() == null ? null : JSON.readTree(o.fieldsJson());
      fields = given instanceof ObjectNode object ? object : JSON.createObjectNode();
    } catch (IOException e) {
      return error(o, output, o.answer(), o.fieldsJson(),
          "cannot read the case or the evaluator's fields to score them: " + e.getMessage());
    }
    ObjectNode scores = fields.putObject(SCORES_FIELD);
    ScoreResult first = null;
    for (Scorer scorer : scorers) {
      ScoreResult r;
      try {
        r = scored(scorer, caseFields, answer, grader);
      } catch (ScoringException e) {
        scores.putObject(scorer.name()).put("error", e.getMessage());
        if (first == null) { // the scorer that decides: without its judgement the case has no verdict
          return error(o, output, answer, fields.toString(), "scorer " + scorer.name() + CANNOT_JUDGE + e.getMessage());
        }
        continue; // another column: said there, the verdict stands
      }
      ObjectNode entry = scores.putObject(scorer.name());
      entry.put("value", r.value());
      entry.put("passed", r.passed());
      entry.put("extracted", r.extracted());
      entry.put("explanation", r.explanation());
      first = first == null ? r : first;
    }
    return new Outcome(first.passed() ? Verdict.PASS : Verdict.FAIL, first.value(), output, o.durationMillis(),
        answer, fields.toString(), o.exitCode(), o.stderrTail());
  }

  /**
   * {@code scorer}'s judgement of the case. A fault of the scorer on this case's data (a bug, or input no check
   * foresaw) is a {@link ScoringException} too, the case's error: thrown on, it would end the attempt as the
   * worker's failure, retried on other workers, each failing alike and ejected for it, and a rescore would
   * stop at the case every time it ran.
   *
   * @throws ScoringException if the scorer cannot judge the case, or fails on it
   * @throws Grader.Unavailable if the grader cannot answer now: the attempt ends, and the case is tried again
   */
  private static ScoreResult scored(Scorer scorer, JsonNode caseFields, String answer, Grader grader) {
    try {
      return scorer.score(caseFields, answer, grader);
    } catch (ScoringException | Grader.Unavailable e) {
      throw e;
    } catch (RuntimeException | StackOverflowError e) {
      throw new ScoringException("failed on this case (" + e.getClass().getSimpleName()
          + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")");
    }
  }

  /** The case's {@code error}: the message on its own line, then as much of what the evaluator printed as fits. */
  private static Outcome error(Outcome o, String output, String answer, String fieldsJson, String message) {
    int room = Math.max(0, Outcome.OUTPUT_TAIL_LIMIT - message.length() - 1);
    String text = message + "\n" + (output.length() <= room ? output : output.substring(output.length() - room));
    return new Outcome(Verdict.ERROR, null, text, o.durationMillis(), answer, fieldsJson, o.exitCode(), o.stderrTail());
  }
}
