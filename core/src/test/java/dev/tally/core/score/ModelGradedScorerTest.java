package dev.tally.core.score;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** model-graded: the prompt it builds, the grade it reads, and how a judge uses its grader. */
class ModelGradedScorerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SPEC = "model-graded:model=judge-1,base-url=http://127.0.0.1:9/v1,name=graded";

  @Test
  void thePromptCarriesTaskReferenceAnswerAndRubricAndTheLastGradeCounts() throws Exception {
    ModelGradedScorer s = (ModelGradedScorer) Scorers.parse(List.of(SPEC + ",rubric=\"Exact numbers only, please.\"")).get(0);
    String prompt = s.prompt(JSON.readTree("{\"input\": [{\"role\": \"user\", \"content\": \"What is 2 + 2?\"}], \"target\": \"4\"}"), "four");
    assertThat(prompt).contains("[Task]\nuser: What is 2 + 2?").contains("[Reference answer]\n4")
        .contains("[Answer to grade]\nfour").contains("[Rubric]\nExact numbers only, please.").contains("GRADE: C");
    assertThat(s.result("It says four; GRADE: I at first glance, but on reflection\nGRADE: C")).isEqualTo(
        new ScoreResult(1, true, "C", "graded correct by judge-1"));
    assertThat(s.result("grade: p").value()).isEqualTo(0.5);
    assertThat(s.result("grade: p").passed()).isFalse();
    assertThatThrownBy(() -> s.result("I think it is fine.")).isInstanceOf(ScoringException.class)
        .hasMessage("the grader judge-1 gave no GRADE: C, P or I; its reply ends: I think it is fine.");
  }

  @Test
  void aJudgeAsksItsGraderAndAGraderThatCannotAnswerEndsTheAttempt() {
    Judge judge = Judge.of(List.of(SPEC, "numeric"));
    List<String> asked = new ArrayList<>();
    Outcome graded = judge.judge(new Outcome(Verdict.PASS, null, "5", 3, "5", null, null, ""),
        "{\"question\": \"What is 2 + 3?\", \"target\": \"5\"}", (scorer, prompt) -> {
          asked.add(scorer.model() + " " + scorer.baseUrl() + " " + scorer.apiKeyEnv());
          return "GRADE: C";
        });
    assertThat(asked).containsExactly("judge-1 http://127.0.0.1:9/v1 OPENAI_API_KEY");
    assertThat(graded.verdict()).isEqualTo(Verdict.PASS);
    assertThat(graded.fieldsJson()).contains("\"graded\":{\"value\":1.0,\"passed\":true,\"extracted\":\"C\"");

    InfraFailure limited = new InfraFailure(InfraFailure.Kind.RATE_LIMITED, "HTTP 429", 2_000);
    assertThatThrownBy(() -> judge.judge(new Outcome(Verdict.PASS, null, "5", 3), "{\"target\": \"5\"}",
        (scorer, prompt) -> {
          throw new Grader.Unavailable(limited);
        })).isInstanceOfSatisfying(Grader.Unavailable.class, e -> assertThat(e.failure()).isEqualTo(limited));

    Outcome notGraded = judge.judge(new Outcome(Verdict.PASS, null, "5", 3), "{\"target\": \"5\"}");
    assertThat(notGraded.verdict()).as("no grader: the first scorer cannot judge").isEqualTo(Verdict.ERROR);
    assertThat(notGraded.outputTail()).startsWith("scorer graded cannot judge this case: model-graded scorer graded was"
        + " not graded: no grader model may be asked here");
  }

  @Test
  void itsSpecNeedsAModelAndAnEndpoint() {
    assertThatThrownBy(() -> Scorers.parse(List.of("model-graded:base-url=http://h/v1")))
        .hasMessageContaining("model-graded needs model=NAME");
    assertThatThrownBy(() -> Scorers.parse(List.of("model-graded:model=m")))
        .hasMessageContaining("model-graded needs base-url=URL");
    assertThat(Scorers.kindNames()).contains("model-graded");
  }
}
