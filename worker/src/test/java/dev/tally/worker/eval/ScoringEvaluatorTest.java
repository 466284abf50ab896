package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import dev.tally.core.score.Scorers;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ScoringEvaluatorTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** An evaluator built as a worker builds it: kind, options, and the run's scorers in the options. */
  private static Evaluator scored(Evaluator inner, String... specs) {
    return new ScoringEvaluator(inner, dev.tally.core.score.Judge.of(List.of(specs)));
  }

  private static Outcome outcome(Evaluator e, String caseJson) {
    Evaluation r = e.evaluate(new EvalContext("c", caseJson, Duration.ofSeconds(30), Ticker.system()));
    assertThat(r).isInstanceOf(Evaluation.Finished.class);
    return ((Evaluation.Finished) r).outcome();
  }

  /** Answers with a fixed outcome, whatever the case. */
  private static Evaluator answering(Outcome o) {
    return ctx -> new Evaluation.Finished(o);
  }

  @Test
  void theFirstScorerDecidesAndEveryScorerIsAColumnBesideTheEvaluatorsOwnFields() throws Exception {
    Evaluator e = scored(answering(new Outcome(Verdict.FAIL, 0.0, "thinking...\n", 5, "The answer is 42.",
        "{\"tokens\":7}", 0, "warn\n")), "numeric:abs=0.5", "exact:name=strict", "includes:ignore-case");
    Outcome o = outcome(e, "{\"id\":\"q\",\"target\":\"42\"}");
    assertThat(o.verdict()).as("numeric decides: 42 is within 0.5 of 42").isEqualTo(Verdict.PASS);
    assertThat(o.score()).isEqualTo(1.0);
    JsonNode fields = JSON.readTree(o.fieldsJson());
    assertThat(fields.get("tokens").asInt()).as("the evaluator's own fields are kept").isEqualTo(7);
    assertThat(fields.get("scores").get("numeric").get("passed").asBoolean()).isTrue();
    assertThat(fields.get("scores").get("strict").get("passed").asBoolean()).isFalse();
    assertThat(fields.get("scores").get("includes").get("passed").asBoolean()).isTrue();
    assertThat(o.answer()).isEqualTo("The answer is 42.");
    assertThat(o.stderrTail()).isEqualTo("warn\n");
    assertThat(o.exitCode()).isZero();
  }

  @Test
  void withoutAnAnswerTheStdoutTailIsJudgedWithoutItsTrailingNewline() {
    Outcome o = outcome(scored(answering(new Outcome(Verdict.PASS, null, "Paris\n", 1)), "exact"),
        "{\"id\":\"q\",\"target\":\"paris\"}");
    assertThat(o.verdict()).as("case matters to exact without ignore-case").isEqualTo(Verdict.FAIL);
    assertThat(o.answer()).isEqualTo("Paris");
    assertThat(outcome(scored(answering(new Outcome(Verdict.PASS, null, "Paris\n", 1)), "exact:ignore-case"),
        "{\"id\":\"q\",\"target\":\"paris\"}").verdict()).isEqualTo(Verdict.PASS);
  }

  @Test
  void aCaseAScorerCannotJudgeIsTheCasesErrorNamingTheScorer() {
    Outcome o = outcome(scored(answering(new Outcome(Verdict.PASS, null, "42\n", 1)), "exact:name=first", "numeric"),
        "{\"id\":\"q\"}");
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).startsWith("scorer first cannot judge this case: ").contains("target").endsWith("42\n");
  }

  @Test
  void aCaseAnotherScorerCannotJudgeKeepsItsVerdictAndThatColumnSaysWhy() throws Exception {
    Outcome o = outcome(scored(answering(new Outcome(Verdict.PASS, null, "Paris\n", 1)), "exact", "numeric"),
        "{\"id\":\"q\",\"target\":\"Paris\"}");
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    JsonNode numeric = JSON.readTree(o.fieldsJson()).get("scores").get("numeric");
    assertThat(numeric.get("error").asText()).contains("not a number");
    assertThat(numeric.has("passed")).isFalse();
  }

  @Test
  void anEvaluatorsErrorAndARetryableFailurePassThroughUnscored() {
    Outcome error = new Outcome(Verdict.ERROR, null, "command not found", 1);
    assertThat(outcome(scored(answering(error), "exact"), "{\"id\":\"q\",\"target\":\"x\"}")).isEqualTo(error);
    Evaluation failed = Evaluation.failed(InfraFailure.Kind.TIMEOUT, "too slow", 9);
    Evaluation r = scored(ctx -> failed, "exact").evaluate(new EvalContext("c", "{}", Duration.ofSeconds(1), Ticker.system()));
    assertThat(r).isSameAs(failed);
  }

  @Test
  void theFactoryWrapsAnyKindWhoseOptionsCarryScorersAndRefusesABadSpec() {
    Evaluator exec = EvaluatorFactory.create("exec", Map.of("cmd", "cat",
        Scorers.OPTION, Scorers.optionValue(List.of("choice"))));
    // cat echoes the case: a verdict line whose answer the scorer judges.
    Outcome o = outcome(exec, "{\"id\":\"q\",\"verdict\":\"fail\",\"choices\":[\"red\",\"blue\"],\"target\":\"B\",\"answer\":\"(B) blue\"}");
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThatThrownBy(() -> EvaluatorFactory.create("noop", Map.of(Scorers.OPTION, "[\"nope\"]")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown scorer nope");
    assertThatThrownBy(() -> EvaluatorFactory.create("noop", Map.of(Scorers.OPTION, "exact")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must be a non-empty JSON array");
  }
}
