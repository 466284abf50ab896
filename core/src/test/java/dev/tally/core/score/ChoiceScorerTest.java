package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.json;
import static dev.tally.core.score.ScorerTesting.scorer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

class ChoiceScorerTest {
  private static final JsonNode CASE = json("{\"id\":\"q1\",\"choices\":[\"Berlin\",\"Paris\",\"Rome\",\"Madrid\"],\"target\":\"B\"}");

  private static ScoreResult answer(String answer) {
    return scorer("choice").score(CASE, answer);
  }

  @Test
  void readsALetterInTheUsualShapes() {
    for (String a : new String[] {"B", "b", " (B)\n", "B.", "[B]", "B)", "Paris", "paris.", "The answer is B",
        "answer: (B)", "The correct answer is option B", "Answer is A. No wait, the answer is B.", "B. Paris", "(B) Paris"}) {
      ScoreResult r = answer(a);
      assertThat(r.passed()).as(a).isTrue();
      assertThat(r.extracted()).as(a).isEqualTo("B");
    }
  }

  @Test
  void aWrongOrMissingChoiceFailsAndSaysWhy() {
    ScoreResult wrong = answer("C");
    assertThat(wrong.passed()).isFalse();
    assertThat(wrong.explanation()).isEqualTo("chose C; right: B");
    ScoreResult none = answer("I think it is the French capital");
    assertThat(none.passed()).isFalse();
    assertThat(none.extracted()).isNull();
    assertThat(none.explanation()).isEqualTo("no choice letter (A-D) or choice text in the answer");
    assertThat(answer("").passed()).isFalse();
    // E is past the last choice: not a choice.
    assertThat(answer("E").extracted()).isNull();
    // A lower-case letter inside a sentence is a word, not a choice.
    assertThat(answer("the answer is a city").extracted()).isNull();
  }

  @Test
  void theTargetMayBeAChoicesTextOrAList() {
    JsonNode byText = json("{\"id\":\"q\",\"choices\":[\"yes\",\"no\"],\"target\":\"no\"}");
    assertThat(scorer("choice").score(byText, "B").passed()).isTrue();
    JsonNode list = json("{\"id\":\"q\",\"choices\":[\"1\",\"2\",\"two\"],\"target\":[\"B\",\"C\"]}");
    assertThat(scorer("choice").score(list, "two").passed()).isTrue();
    assertThat(scorer("choice").score(list, "A").explanation()).isEqualTo("chose A; right: B or C");
  }

  @Test
  void choicesAndTargetsInTheWrongShapeAreTheCasesError() {
    assertThatThrownBy(() -> scorer("choice").score(json("{\"id\":\"q\",\"target\":\"A\"}"), "A"))
        .isInstanceOf(ScoringException.class).hasMessage("choice: the case has no \"choices\" field");
    assertThatThrownBy(() -> scorer("choice").score(json("{\"id\":\"q\",\"choices\":\"AB\",\"target\":\"A\"}"), "A"))
        .hasMessageContaining("must be a non-empty list of strings; got a string");
    assertThatThrownBy(() -> scorer("choice").score(json("{\"id\":\"q\",\"choices\":[\"x\",\"y\"],\"target\":\"Z\"}"), "A"))
        .hasMessage("choice: case field \"target\" \"Z\" is neither a letter A-B nor the text of one of the 2 choices");
    StringBuilder many = new StringBuilder("{\"id\":\"q\",\"target\":\"A\",\"choices\":[");
    for (int i = 0; i < 27; i++) {
      many.append(i == 0 ? "" : ",").append("\"c").append(i).append('"');
    }
    assertThatThrownBy(() -> scorer("choice").score(json(many + "]}"), "A")).hasMessageContaining("at most 26");
  }
}
