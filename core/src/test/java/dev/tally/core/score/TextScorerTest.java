package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.score;
import static dev.tally.core.score.ScorerTesting.scorer;
import static dev.tally.core.score.ScorerTesting.target;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TextScorerTest {

  @Test
  void exactComparesWholeTextStrippedAtTheEnds() {
    ScoreResult r = scorer("exact").score(target("\"Paris\""), "Paris\n");
    assertThat(r.passed()).isTrue();
    assertThat(r.value()).isEqualTo(1.0);
    assertThat(r.extracted()).isEqualTo("Paris");
    ScoreResult wrong = scorer("exact").score(target("\"Paris\""), "paris");
    assertThat(wrong.passed()).isFalse();
    assertThat(wrong.value()).isZero();
    assertThat(wrong.explanation()).isEqualTo("does not equal the target \"Paris\"");
  }

  @Test
  void eachNormalisationOptionDoesItsPart() {
    assertThat(scorer("exact:ignore-case").score(target("\"STRASSE\""), "Straße").passed()).isTrue();
    assertThat(scorer("exact:ignore-whitespace").score(target("\"1 000\""), " 1000 ").passed()).isTrue();
    assertThat(scorer("exact:ignore-punctuation").score(target("\"well done\""), "well, done!").passed()).isFalse();
    assertThat(scorer("exact:ignore-punctuation,ignore-whitespace").score(target("\"well done\""), "well, done!").passed()).isTrue();
    assertThat(scorer("exact:ignore-punctuation").score(target("\"C++\""), "C++.").passed()).isTrue();
    assertThat(scorer("exact:ignore-articles").score(target("\"Eiffel Tower\""), "The Eiffel Tower").passed()).isTrue();
    assertThat(scorer("exact:ignore-articles").score(target("\"Theatre\""), "Theatre").passed()).isTrue();
    assertThat(scorer("exact:ignore-articles,ignore-case").score(target("\"an apple\""), "THE Apple").passed()).isTrue();
    assertThat(scorer("exact").score(target("\"The Eiffel Tower\""), "Eiffel Tower").passed()).isFalse();
  }

  @Test
  void composedAndDecomposedUnicodeAreTheSameText() {
    assertThat(scorer("exact").score(target("\"caf\\u00e9\""), "cafe\u0301").passed()).isTrue();
    assertThat(scorer("includes:ignore-case").score(target("\"ÉCOLE\""), "à l'école").passed()).isTrue();
  }

  @Test
  void aListTargetPassesOnAnyOfItsItemsAndSaysWhich() {
    ScoreResult r = scorer("exact:ignore-case").score(target("[\"NYC\", \"New York\"]"), "new york");
    assertThat(r.passed()).isTrue();
    assertThat(r.explanation()).isEqualTo("equals target 2 of 2, \"new york\"");
    assertThat(scorer("exact").score(target("[\"a\", \"b\"]"), "c").explanation()).isEqualTo("does not equal any of the 2 targets");
    assertThat(scorer("exact").score(target("42"), "42").passed()).isTrue();
  }

  @Test
  void anEmptyAnswerPassesOnlyAnEmptyExactTarget() {
    assertThat(scorer("exact").score(target("\"\""), "").passed()).isTrue();
    assertThat(scorer("exact").score(target("\"x\""), null).passed()).isFalse();
    assertThat(scorer("includes").score(target("\"x\""), "").passed()).isFalse();
  }

  @Test
  void includesFindsTheTargetInsideTheAnswer() {
    assertThat(scorer("includes").score(target("\"42\""), "The answer is 42.").passed()).isTrue();
    assertThat(scorer("includes").score(target("\"43\""), "The answer is 42.").passed()).isFalse();
    assertThatThrownBy(() -> scorer("includes:ignore-articles").score(target("\"the\""), "anything"))
        .isInstanceOf(ScoringException.class)
        .hasMessageContaining("empty after normalisation");
  }

  @Test
  void aCaseWithoutAUsableTargetIsTheCasesError() {
    assertThatThrownBy(() -> score("exact", "{\"id\":\"1\"}", "x"))
        .isInstanceOf(ScoringException.class).hasMessage("exact: the case has no \"target\" field");
    assertThatThrownBy(() -> score("exact", "{\"id\":\"1\",\"target\":[]}", "x")).hasMessageContaining("empty list");
    assertThatThrownBy(() -> score("exact", "{\"id\":\"1\",\"target\":[\"a\",{\"b\":1}]}", "x"))
        .hasMessageContaining("case field \"target[1]\" must be a string, or a list of strings; got an object");
  }

  @Test
  void longTextsAreCutInTheResult() {
    String answer = "x".repeat(2_000);
    ScoreResult r = scorer("exact").score(target("\"y\""), answer);
    assertThat(r.extracted()).hasSize(ScoreResult.MAX_TEXT_CHARS).endsWith("…");
  }
}
