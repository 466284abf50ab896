package dev.tally.core.score;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ScorerSpecTest {

  @Test
  void readsKindFlagsAndValuesInOrder() {
    ScorerSpec s = ScorerSpec.parse("exact:ignore-case, ignore-punctuation,name=strict");
    assertThat(s.kind()).isEqualTo("exact");
    Map<String, String> expected = new LinkedHashMap<>();
    expected.put("ignore-case", null);
    expected.put("ignore-punctuation", null);
    expected.put("name", "strict");
    assertThat(s.options()).containsExactlyEntriesOf(expected);
    assertThat(ScorerSpec.parse("choice").options()).isEmpty();
  }

  @Test
  void aRawValueKeepsBackslashesAndAQuotedValueMayHoldCommas() {
    assertThat(ScorerSpec.parse("regex:pattern=^\\d+$").options()).containsEntry("pattern", "^\\d+$");
    assertThat(ScorerSpec.parse("regex:pattern=\"^(yes|no),\\\"x\\\"\",ignore-case").options())
        .containsEntry("pattern", "^(yes|no),\"x\"")
        .containsKey("ignore-case");
    assertThat(ScorerSpec.parse("regex:pattern=a=b").options()).containsEntry("pattern", "a=b");
  }

  @Property
  void theCanonicalTextReadsBackAsTheSameSpec(
      @ForAll("optionValues") List<String> values, @ForAll boolean flagFirst) {
    Map<String, String> options = new LinkedHashMap<>();
    if (flagFirst) {
      options.put("ignore-case", null);
    }
    for (int i = 0; i < values.size(); i++) {
      options.put("o" + i, values.get(i));
    }
    ScorerSpec spec = new ScorerSpec("x", "regex", options);
    ScorerSpec back = ScorerSpec.parse(spec.canonicalText());
    assertThat(back.kind()).isEqualTo("regex");
    assertThat(back.options()).containsExactlyEntriesOf(options);
  }

  @Provide
  Arbitrary<List<String>> optionValues() {
    Arbitrary<String> value = Arbitraries.oneOf(
        Arbitraries.strings().withChars(",\"\\=: a\u00e9\u4e2d\t").ofMinLength(1).ofMaxLength(12),
        Arbitraries.strings().all().ofMinLength(1).ofMaxLength(12));
    return value.list().ofMaxSize(4);
  }

  @Test
  void grammarErrorsQuoteTheSpecAndSayWhere() {
    assertThatThrownBy(() -> ScorerSpec.parse(":x")).hasMessage("scorer \":x\": no scorer kind before the options");
    assertThatThrownBy(() -> ScorerSpec.parse("Exact")).hasMessageContaining("\"Exact\" is not a scorer kind");
    assertThatThrownBy(() -> ScorerSpec.parse("exact:")).hasMessageContaining("an empty option at character 7");
    assertThatThrownBy(() -> ScorerSpec.parse("exact:ignore-case,")).hasMessageContaining("a trailing comma");
    assertThatThrownBy(() -> ScorerSpec.parse("exact:ignore-case,,x")).hasMessageContaining("an empty option");
    assertThatThrownBy(() -> ScorerSpec.parse("numeric:abs=")).hasMessageContaining("option abs has an empty value");
    assertThatThrownBy(() -> ScorerSpec.parse("numeric:abs=1,abs=2")).hasMessageContaining("option abs is given twice");
    assertThatThrownBy(() -> ScorerSpec.parse("regex:pattern=\"abc")).hasMessageContaining("has no closing \"");
    assertThatThrownBy(() -> ScorerSpec.parse("regex:pattern=\"abc\"x")).hasMessageContaining("text after option pattern's quoted value");
    assertThatThrownBy(() -> ScorerSpec.parse("exact:Ignore-Case")).hasMessageContaining("\"Ignore-Case\" is not an option name");
  }

  @Test
  void unknownKindsAndOptionsAreNamedWithTheKnownOnes() {
    assertThatThrownBy(() -> Scorers.parse(List.of("exac:ignore-case")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("scorer \"exac:ignore-case\": unknown scorer exac; the scorers are exact, includes, regex, numeric, choice, json, model-graded");
    assertThatThrownBy(() -> Scorers.parse(List.of("exact:ignore-cas")))
        .hasMessage("scorer \"exact:ignore-cas\": exact has no option ignore-cas; its options are ignore-articles, ignore-case, "
            + "ignore-punctuation, ignore-whitespace, name=...");
    assertThatThrownBy(() -> Scorers.parse(List.of("numeric:tolerance=1")))
        .hasMessageContaining("numeric has no option tolerance; its options are abs=..., rel=..., name=...");
    assertThatThrownBy(() -> Scorers.parse(List.of("exact:ignore-case=yes"))).hasMessageContaining("option ignore-case takes no value");
    assertThatThrownBy(() -> Scorers.parse(List.of("numeric:abs"))).hasMessageContaining("option abs needs a value: abs=...");
    assertThatThrownBy(() -> Scorers.parse(List.of("choice:name=a.b"))).hasMessageContaining("name \"a.b\" must be 1 to 64");
  }

  @Test
  void badValuesAreRefusedWhenParsed() {
    assertThatThrownBy(() -> Scorers.parse(List.of("regex:pattern=(a"))).hasMessageContaining("pattern does not compile");
    assertThatThrownBy(() -> Scorers.parse(List.of("numeric:rel=-0.1"))).hasMessageContaining("rel=-0.1 is negative");
    assertThatThrownBy(() -> Scorers.parse(List.of("numeric:abs=ten"))).hasMessageContaining("abs=ten is not a number");
    assertThatThrownBy(() -> Scorers.parse(List.of("json:parses,schema-field=s"))).hasMessageContaining("at most one of");
    assertThatThrownBy(() -> Scorers.parse(List.of("json:schema-file=s.json")))
        .hasMessageContaining("cannot read schema-file s.json: no file reader was given");
  }

  @Test
  void scorersKeepTheirOrderAndNamesMustDiffer() {
    List<Scorer> scorers = Scorers.parse(List.of("numeric:rel=0.01", "exact:ignore-case", "exact:name=strict"));
    assertThat(scorers).extracting(Scorer::name).containsExactly("numeric", "exact", "strict");
    assertThatThrownBy(() -> Scorers.parse(List.of("exact", "exact:ignore-case")))
        .hasMessage("scorer \"exact:ignore-case\": a second scorer named exact (the first is \"exact\"); give one of them name=SOMETHING");
    assertThat(Scorers.parse(List.of())).isEmpty();
  }
}
