package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.scorer;
import static dev.tally.core.score.ScorerTesting.target;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class RegexScorerTest {

  @Test
  void aPatternOptionIsFoundAnywhereAndReadsItsFirstGroup() {
    ScoreResult r = scorer("regex:pattern=answer: (\\d+)").score(target("\"ignored\""), "so the answer: 42, done");
    assertThat(r.passed()).isTrue();
    assertThat(r.extracted()).isEqualTo("42");
    assertThat(scorer("regex:pattern=^A").score(target("\"x\""), "B then A").passed()).isFalse();
    // No target needed when the pattern is given.
    assertThat(scorer("regex:pattern=^A").score(ScorerTesting.json("{\"id\":\"1\"}"), "A").passed()).isTrue();
  }

  @Test
  void fullAsksTheWholeAnswerToMatchAndIgnoreCaseIsUnicode() {
    assertThat(scorer("regex:pattern=yes,full").score(target("\"x\""), "yes!").passed()).isFalse();
    assertThat(scorer("regex:pattern=yes,full").score(target("\"x\""), "yes").passed()).isTrue();
    assertThat(scorer("regex:pattern=ÉTÉ,ignore-case").score(target("\"x\""), "un été").passed()).isTrue();
  }

  @Test
  void withoutAPatternTheTargetsArePatterns() {
    assertThat(scorer("regex").score(target("[\"^cat\", \"^dog\"]"), "dog food").passed()).isTrue();
    assertThat(scorer("regex").score(target("[\"^cat\", \"^dog\"]"), "bird").explanation())
        .isEqualTo("none of the 2 patterns is found");
    assertThatThrownBy(() -> scorer("regex").score(target("[\"ok\", \"(\"]"), "x"))
        .isInstanceOf(ScoringException.class)
        .hasMessageContaining("case field \"target\"[1] is not a regular expression");
  }

  @Test
  void aRunawayPatternIsStoppedAndIsTheCasesError() {
    // Unbudgeted, this match takes about 20 s on an idle machine (java.util.regex memoizes simpler runaways).
    Scorer s = scorer("regex:pattern=(.*a){12}!x");
    assertThatThrownBy(() -> s.score(target("\"x\""), "a".repeat(30) + "!"))
        .isInstanceOf(ScoringException.class)
        .hasMessageContaining("catastrophic backtracking");
  }
}
