package dev.tally.core.score;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

class JudgeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CASE_42 = "{\"id\":\"q\",\"target\":\"42\"}";

  private static Judge judge(String... specs) {
    return Judge.of(List.of(specs));
  }

  private static JsonNode fields(Outcome o) throws Exception {
    return JSON.readTree(o.fieldsJson());
  }

  @Test
  void rejudgingAPassWithOtherScorersReplacesItsVerdictScoreAndEveryColumnAndKeepsTheEvaluatorsFields() throws Exception {
    Outcome evaluated = new Outcome(Verdict.PASS, null, "The answer is 42.\n", 7, null, "{\"tokens\":3}", 0, "warn");
    Outcome first = judge("includes:name=loose").judge(evaluated, CASE_42);
    assertThat(first.verdict()).isEqualTo(Verdict.PASS);
    assertThat(first.answer()).as("the judged answer is kept").isEqualTo("The answer is 42.");

    Outcome again = judge("exact").rejudge(first, CASE_42).orElseThrow();
    assertThat(again.verdict()).as("exact: the sentence is not 42").isEqualTo(Verdict.FAIL);
    assertThat(again.score()).isEqualTo(0.0);
    JsonNode f = fields(again);
    assertThat(f.get("tokens").asInt()).isEqualTo(3);
    assertThat(f.get("scores").has("loose")).as("the earlier scorers' columns go with them").isFalse();
    assertThat(f.get("scores").get("exact").get("passed").asBoolean()).isFalse();
    assertThat(again.outputTail()).isEqualTo(evaluated.outputTail());
    assertThat(again.durationMillis()).isEqualTo(7);
    assertThat(again.exitCode()).isZero();
    assertThat(again.stderrTail()).isEqualTo("warn");
    assertThat(judge("exact").rejudge(again, CASE_42)).as("judging twice is judging once").contains(again);
  }

  @Test
  void anOutcomeOfARunWithoutScorersIsJudgedFromItsOutputAsAWorkerWouldHave() {
    Outcome byVerdictLine = new Outcome(Verdict.FAIL, 0.5, "42\n", 3);
    Outcome rescored = judge("numeric").rejudge(byVerdictLine, CASE_42).orElseThrow();
    assertThat(rescored).isEqualTo(judge("numeric").judge(byVerdictLine, CASE_42));
    assertThat(rescored.verdict()).isEqualTo(Verdict.PASS);
    assertThat(rescored.score()).isEqualTo(1.0);
  }

  @Test
  void theEvaluatorsOwnErrorKeepsItsOutcome() {
    Outcome notFound = new Outcome(Verdict.ERROR, null, "sh: 1: scorer: not found", 1, "42", null, 127, "");
    assertThat(judge("exact").judge(notFound, CASE_42)).isSameAs(notFound);
    assertThat(judge("exact").rejudge(notFound, CASE_42)).isEmpty();
    // An evaluator that happens to print a judgement's words is not taken for one: its column is missing.
    Outcome lookalike = new Outcome(Verdict.ERROR, null, "scorer exact cannot judge this case: no\n42", 1);
    assertThat(judge("exact").rejudge(lookalike, CASE_42)).isEmpty();
  }

  @Test
  void aCaseTheFirstScorerCouldNotJudgeIsJudgedAgainFromItsAnswerWithTheMessageTakenOff() throws Exception {
    String noNumber = "{\"id\":\"q\",\"target\":\"forty-two\"}";
    Outcome evaluated = new Outcome(Verdict.PASS, null, "thinking\nforty-two\n", 4);
    Outcome error = judge("numeric", "exact").judge(evaluated, noNumber);
    assertThat(error.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(error.outputTail()).startsWith("scorer numeric cannot judge this case: ").endsWith("\nthinking\nforty-two\n");
    assertThat(error.answer()).isEqualTo("thinking\nforty-two");
    assertThat(fields(error).get("scores").get("numeric").get("error").asText()).contains("not a number");

    Outcome judged = judge("includes").rejudge(error, noNumber).orElseThrow();
    assertThat(judged.verdict()).isEqualTo(Verdict.PASS);
    assertThat(judged.outputTail()).as("what the evaluator printed, as it printed it").isEqualTo(evaluated.outputTail());
    assertThat(judged).isEqualTo(judge("includes").judge(evaluated, noNumber));
    // Judged again by a scorer that still cannot: the same error, not a message stacked on a message.
    assertThat(judge("numeric", "exact").rejudge(error, noNumber)).contains(error);
  }

  @Test
  void aJudgeNeedsScorersAndRefusesABadSpecWithTheScorersOwnMessage() {
    assertThatThrownBy(() -> Judge.of(List.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one scorer");
    assertThatThrownBy(() -> Judge.of(List.of("exact", "nope"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown scorer nope");
    assertThat(judge("exact", "numeric:abs=1").optionValue()).isEqualTo("[\"exact\",\"numeric:abs=1\"]");
  }

  @Test
  void aScorerThatFailsOnACasesDataMakesThatCaseAnErrorAndTheOtherColumnsStand() throws Exception {
    Outcome evaluated = new Outcome(Verdict.PASS, null, "5\n", 7, null, null, 0, "");
    String huge = "{\"id\":\"q\",\"target\":1e400}";
    Outcome judged = judge("numeric").judge(evaluated, huge);
    assertThat(judged.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(fields(judged).get("scores").get("numeric").get("error").asText()).contains("beyond a double's range");
    // A second column's failure is said in it, and the verdict stands: never a crash of the attempt (which
    // was retried on every worker, each ejected for it, and stopped a rescore at this case every time).
    String cycle = "{\"id\":\"q\",\"target\":\"5\",\"s\":{\"$ref\":\"#/definitions/x\",\"definitions\":{\"x\":{\"$ref\":\"#/definitions/x\"}}}}";
    Outcome second = judge("exact", "json:schema-field=s,name=shape").judge(evaluated, cycle);
    assertThat(second.verdict()).as("the first scorer decides").isEqualTo(Verdict.PASS);
    assertThat(fields(second).get("scores").get("shape").get("error").asText()).contains("without end");
  }

  @Test
  void aFaultNoCheckForesawIsTheCasesErrorButAnUnavailableGraderStillEndsTheAttempt() throws Exception {
    Scorer broken = throwing("broken", () -> new IllegalStateException("a bug"));
    Outcome evaluated = new Outcome(Verdict.PASS, null, "42\n", 7, null, null, 0, "");
    Outcome judged = new Judge(List.of("broken"), List.of(broken)).judge(evaluated, CASE_42);
    assertThat(judged.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(judged.outputTail()).startsWith("scorer broken").contains("IllegalStateException: a bug");

    Scorer unavailable = throwing("grader",
        () -> new Grader.Unavailable(new dev.tally.core.InfraFailure(dev.tally.core.InfraFailure.Kind.TIMEOUT, "slow")));
    org.assertj.core.api.Assertions.assertThatThrownBy(
        () -> new Judge(List.of("grader"), List.of(unavailable)).judge(evaluated, CASE_42))
        .as("retried elsewhere, not the case's error").isInstanceOf(Grader.Unavailable.class);
  }

  /** A scorer named {@code name} that throws what {@code failure} makes on every case. */
  private static Scorer throwing(String name, java.util.function.Supplier<RuntimeException> failure) {
    return new Scorer() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public ScoreResult score(JsonNode caseFields, String answer) {
        throw failure.get();
      }
    };
  }
}
