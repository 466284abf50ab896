package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.scorer;
import static dev.tally.core.score.ScorerTesting.target;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class NumericScorerTest {

  @Test
  void readsTheLastNumberInTheAnswer() {
    ScoreResult r = scorer("numeric").score(target("42"), "6 times 7 is 42.");
    assertThat(r.passed()).isTrue();
    assertThat(r.extracted()).isEqualTo("42");
    assertThat(scorer("numeric").score(target("6"), "6 times 7 is 42").passed()).isFalse();
    assertThat(scorer("numeric").score(target("1234.5"), "It costs $1,234.50").extracted()).isEqualTo("1234.50");
    assertThat(scorer("numeric").score(target("-4"), "x = -4").passed()).isTrue();
    assertThat(scorer("numeric").score(target("4"), "from 3-4").passed()).isTrue();
    assertThat(scorer("numeric").score(target("0.0015"), "about 1.5e-3").passed()).isTrue();
    assertThat(scorer("numeric").score(target("0.5"), "it is .5").passed()).isTrue();
    assertThat(scorer("numeric").score(target("1.5"), "1.50").explanation()).isEqualTo("equals 1.5");
    // Thousands commas only in threes: "1,2345" is not 1,234 and a stray 5.
    assertThat(scorer("numeric").score(target("2345"), "1,2345").extracted()).isEqualTo("2345");
    assertThat(scorer("numeric").score(target("3"), "1,2,3").passed()).isTrue();
  }

  @Test
  void unicodeDigitsAndTheMinusSignAreRead() {
    assertThat(scorer("numeric").score(target("42"), "答えは４２です").passed()).isTrue();
    assertThat(scorer("numeric").score(target("-3"), "\u22123").passed()).isTrue();
  }

  @Test
  void noNumberOrAnEmptyAnswerFails() {
    ScoreResult r = scorer("numeric").score(target("1"), "I don't know");
    assertThat(r.passed()).isFalse();
    assertThat(r.extracted()).isNull();
    assertThat(r.explanation()).isEqualTo("no number in the answer");
    assertThat(scorer("numeric").score(target("1"), "").passed()).isFalse();
    assertThat(scorer("numeric").score(target("1"), "-").passed()).isFalse();
  }

  // The boundaries hold exactly as written, which binary floating point would not give: 1.1 - 1.0 is
  // 0.10000000000000009 as a double.
  @Test
  void absoluteToleranceHoldsExactlyAtItsBoundary() {
    Scorer s = scorer("numeric:abs=0.1");
    assertThat(s.score(target("1.1"), "1.0").passed()).isTrue();
    assertThat(s.score(target("1.1"), "1.2").passed()).isTrue();
    assertThat(s.score(target("1.1"), "1.2000001").passed()).isFalse();
    assertThat(s.score(target("1.1"), "0.9999999").passed()).isFalse();
    assertThat(s.score(target("1.1"), "1.0").explanation()).isEqualTo("within abs 0.1 of 1.1 (off by 0.1)");
  }

  @Test
  void relativeToleranceIsAShareOfTheTarget() {
    Scorer s = scorer("numeric:rel=0.01");
    assertThat(s.score(target("200"), "202").passed()).isTrue();
    assertThat(s.score(target("200"), "198").passed()).isTrue();
    assertThat(s.score(target("200"), "202.01").passed()).isFalse();
    assertThat(s.score(target("-200"), "-202").passed()).isTrue();
    // A target of 0 has no relative room.
    assertThat(s.score(target("0"), "0.0001").passed()).isFalse();
    assertThat(s.score(target("0"), "0").passed()).isTrue();
  }

  @Test
  void withBothTolerancesEitherSufficesAndTheExplanationSaysWhich() {
    Scorer s = scorer("numeric:abs=0.5,rel=0.01");
    assertThat(s.score(target("10"), "10.5").explanation()).isEqualTo("within abs 0.5 of 10 (off by 0.5)");
    assertThat(s.score(target("1000"), "1010").explanation()).isEqualTo("within rel 0.01 of 1000 (off by 10)");
    assertThat(s.score(target("50"), "50.5").explanation()).isEqualTo("within abs 0.5 and rel 0.01 of 50 (off by 0.5)");
    ScoreResult no = s.score(target("10"), "11");
    assertThat(no.passed()).isFalse();
    assertThat(no.explanation()).isEqualTo("not 10 (off by 1) within abs 0.5 or rel 0.01");
  }

  @Test
  void targetsMayBeStringsOrListsAndBadOnesAreTheCasesError() {
    assertThat(scorer("numeric").score(target("\"1,000\""), "1000").passed()).isTrue();
    assertThat(scorer("numeric").score(target("[\"7\", 8]"), "8").passed()).isTrue();
    assertThatThrownBy(() -> scorer("numeric").score(target("\"ten\""), "10"))
        .isInstanceOf(ScoringException.class)
        .hasMessage("numeric: case field \"target\" is not a number: \"ten\"");
    assertThatThrownBy(() -> scorer("numeric").score(target("[1, true]"), "1"))
        .hasMessageContaining("case field \"target[1]\" must be a number or a string of one; got a boolean");
  }

  // Another way to the same verdict: integers in hundredths, compared as integers.
  @Property
  void absoluteToleranceAgreesWithIntegerArithmetic(
      @ForAll @IntRange(min = -100_000, max = 100_000) int targetCents,
      @ForAll @IntRange(min = -100_000, max = 100_000) int answerCents,
      @ForAll @IntRange(min = 0, max = 50_000) int toleranceCents) {
    Scorer s = scorer("numeric:abs=" + BigDecimal.valueOf(toleranceCents, 2).toPlainString());
    boolean expected = Math.abs(answerCents - targetCents) <= toleranceCents;
    String answer = "= " + BigDecimal.valueOf(answerCents, 2).toPlainString();
    assertThat(s.score(target(BigDecimal.valueOf(targetCents, 2).toPlainString()), answer).passed()).isEqualTo(expected);
  }

  @Test
  void numbersBeyondRangeAreSaidAndNeverReadInPieces() {
    // Beyond a double: JSON readers make 1e400 an infinity. The case's fault, said as such (it crashed the scorer).
    assertThatThrownBy(() -> ScorerTesting.score("numeric", "{\"id\":\"a\",\"target\":1e400}", "5"))
        .isInstanceOf(ScoringException.class).hasMessageContaining("beyond a double's range");
    assertThatThrownBy(() -> scorer("numeric").score(target("\"1e1000\""), "5"))
        .isInstanceOf(ScoringException.class).hasMessageContaining("exponent beyond 999");
    // A long exponent is one number, not "1e200" then "0000" read as 0 (which passed against 0).
    ScoreResult huge = scorer("numeric").score(target("0"), "1e2000000");
    assertThat(huge.passed()).isFalse();
    assertThat(huge.explanation()).contains("exponent beyond 999");
    assertThat(scorer("numeric").score(target("0"), "1e99999999999").passed()).isFalse();
    // Within the bound, exact as ever, far past a double.
    assertThat(scorer("numeric").score(target("\"1e500\""), "1E+500").passed()).isTrue();
    assertThat(scorer("numeric").score(target("1000"), "1e0003").passed()).isTrue();
    // A tolerance too: refused with the spec, not in every case's arithmetic.
    assertThatThrownBy(() -> scorer("numeric:rel=1e2147483647")).hasMessageContaining("exponent beyond 999");
    assertThat(scorer("numeric:abs=1e-5").score(target("1"), "1.000001").passed()).isTrue();
  }
}
