package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.json;
import static dev.tally.core.score.ScorerTesting.scorer;
import static dev.tally.core.score.ScorerTesting.target;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonScorerTest {
  private static final String SCHEMA =
      "{\"type\":\"object\",\"required\":[\"name\",\"age\"],\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\",\"minimum\":0}}}";

  private static Scorer withFiles(String spec, Map<String, String> files) {
    return Scorers.parse(List.of(spec), path -> {
      String text = files.get(path);
      if (text == null) {
        throw new IOException("no such file");
      }
      return text;
    }).get(0);
  }

  @Test
  void equalsTheTargetAsJsonWhateverTheKeyOrderAndNumberForm() {
    assertThat(scorer("json").score(target("{\"a\":1,\"b\":[true,null]}"), "{\"b\": [true, null], \"a\": 1.0}").passed()).isTrue();
    assertThat(scorer("json").score(target("\"{\\\"a\\\": 1}\""), " {\"a\":1}\n").passed()).isTrue();
    ScoreResult r = scorer("json").score(target("{\"a\":1}"), "{\"a\":2}");
    assertThat(r.passed()).isFalse();
    assertThat(r.extracted()).isEqualTo("{\"a\":2}");
    assertThat(r.explanation()).isEqualTo("differs from the target \"{\"a\":1}\"");
  }

  @Test
  void aMarkdownFenceAroundTheAnswerIsIgnored() {
    assertThat(scorer("json").score(target("[1,2]"), "```json\n[1, 2]\n```").passed()).isTrue();
  }

  @Test
  void anAnswerThatIsNotJsonFails() {
    ScoreResult r = scorer("json:parses").score(json("{\"id\":\"1\"}"), "{\"a\":1,}");
    assertThat(r.passed()).isFalse();
    assertThat(r.explanation()).startsWith("not JSON: ");
    assertThat(scorer("json:parses").score(json("{\"id\":\"1\"}"), "").explanation()).isEqualTo("not JSON: the answer is empty");
    assertThat(scorer("json:parses").score(json("{\"id\":\"1\"}"), "{\"a\":1,\"a\":2}").passed()).isFalse();
    assertThat(scorer("json:parses").score(json("{\"id\":\"1\"}"), "[\"ü\"]").passed()).isTrue();
  }

  @Test
  void aSchemaFromAFileIsReadOnceAndValidatesEachAnswer() {
    Scorer s = withFiles("json:schema-file=person.json", Map.of("person.json", SCHEMA));
    assertThat(s.score(json("{\"id\":\"1\"}"), "{\"name\":\"Ada\",\"age\":36}").passed()).isTrue();
    ScoreResult r = s.score(json("{\"id\":\"1\"}"), "{\"name\":\"Ada\",\"age\":-1}");
    assertThat(r.passed()).isFalse();
    assertThat(r.explanation()).startsWith("1 schema error: ").contains("age");
    assertThat(s.score(json("{\"id\":\"1\"}"), "{}").explanation()).startsWith("2 schema errors: ");
  }

  @Test
  void aSchemaFromACaseFieldIsThatCasesSchema() {
    String c = "{\"id\":\"1\",\"shape\":" + SCHEMA + "}";
    assertThat(ScorerTesting.score("json:schema-field=shape", c, "{\"name\":\"Ada\",\"age\":1}").passed()).isTrue();
    assertThat(ScorerTesting.score("json:schema-field=shape", c, "{\"name\":3,\"age\":1}").passed()).isFalse();
    assertThatThrownBy(() -> ScorerTesting.score("json:schema-field=shape", "{\"id\":\"1\"}", "{}"))
        .isInstanceOf(ScoringException.class).hasMessage("json: the case has no \"shape\" field");
    assertThatThrownBy(() -> ScorerTesting.score("json:schema-field=shape", "{\"id\":\"1\",\"shape\":[1]}", "{}"))
        .hasMessageContaining("is not a JSON Schema");
  }

  @Test
  void aSchemaNamingAnOlderDraftIsReadOffline() {
    String draft7 = "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"array\",\"items\":{\"type\":\"number\"}}";
    Scorer s = withFiles("json:schema-file=nums.json", Map.of("nums.json", draft7));
    assertThat(s.score(json("{\"id\":\"1\"}"), "[1, 2.5]").passed()).isTrue();
    assertThat(s.score(json("{\"id\":\"1\"}"), "[1, \"2\"]").passed()).isFalse();
  }

  @Test
  void badSchemaFilesAreRefusedWhenParsed() {
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of()))
        .hasMessage("scorer \"json:schema-file=a.json\": cannot read schema-file a.json: no such file");
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "{")))
        .hasMessageContaining("schema-file a.json is not JSON");
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "[]")))
        .hasMessageContaining("schema-file a.json is not a JSON Schema");
  }

  @Test
  void aSchemaThatBreaksItsMetaSchemaIsRefusedNotUsedToFailAnswers() {
    // {"type": 5} parses as JSON and as a schema object, but is no schema: before, it failed every answer.
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "{\"type\":5}")))
        .hasMessageContaining("schema-file a.json is not a JSON Schema: /type: ");
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json",
        Map.of("a.json", "{\"properties\":{\"a\":{\"minimum\":\"x\"}}}")))
        .hasMessageContaining("/properties/a/minimum: string found, number expected");
    // Judged by the dialect it names: draft-07's meta-schema refuses it too.
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json",
        Map.of("a.json", "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":7}")))
        .hasMessageContaining("/type: ");
    // A case's own schema is that case's error, in its column, not a failed answer.
    assertThatThrownBy(() -> ScorerTesting.score("json:schema-field=shape", "{\"id\":\"1\",\"shape\":{\"type\":5}}", "{}"))
        .isInstanceOf(ScoringException.class).hasMessageContaining("case field \"shape\" is not a JSON Schema: /type: ");
    // A draft however its $schema is spelled (final #, http or https), as before the meta-schema check.
    for (String spelled : List.of("http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema#")) {
      Scorer s = withFiles("json:schema-file=a.json", Map.of("a.json", "{\"$schema\":\"" + spelled + "\",\"type\":\"object\"}"));
      assertThat(s.score(json("{\"id\":\"1\"}"), "{}").passed()).as(spelled).isTrue();
    }
    // A reference that cannot be resolved, or a pattern that is no regular expression: refused before the run,
    // not every case's error.
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "{\"$ref\":\"http://example.com/x.json\"}")))
        .hasMessageContaining("it refers to http://example.com/x.json, which is not in the schema (nothing is fetched)");
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "{\"properties\":{\"p\":{\"$ref\":\"#/$defs/nope\"}}}")))
        .hasMessageContaining("/$defs/nope cannot be resolved");
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json", Map.of("a.json", "{\"pattern\":\"(\"}")))
        .hasMessageContaining("a pattern is not a regular expression: Unclosed group").hasMessageNotContaining("java.");
    assertThat(withFiles("json:schema-file=a.json", Map.of("a.json", "{\"type\":\"object\",\"properties\":{\"child\":{\"$ref\":\"#\"}}}")))
        .as("a recursive schema is a schema").isNotNull();
    // A dialect the validator does not hold is never fetched: refused, by name.
    assertThatThrownBy(() -> withFiles("json:schema-file=a.json",
        Map.of("a.json", "{\"$schema\":\"https://example.com/my-dialect\",\"type\":\"object\"}")))
        .hasMessageContaining("schema-file a.json is not a JSON Schema: its $schema https://example.com/my-dialect is none of");
  }

  @Test
  void aSchemaFileIsInlinedForWorkersThatCannotReadIt() {
    List<String> specs = Scorers.withFilesInlined(
        List.of("exact:ignore-case", "json:name=shape,schema-file=person.json"), path -> SCHEMA);
    assertThat(specs.get(0)).isEqualTo("exact:ignore-case");
    assertThat(specs.get(1)).startsWith("json:name=shape,schema=\"{").doesNotContain("person.json");
    // Parsed again with no file reader, it judges as the file did.
    Scorer s = Scorers.parse(specs).get(1);
    assertThat(s.name()).isEqualTo("shape");
    assertThat(s.score(json("{\"id\":\"1\"}"), "{\"name\":\"Ada\",\"age\":36}").passed()).isTrue();
    assertThat(s.score(json("{\"id\":\"1\"}"), "{\"name\":\"Ada\"}").passed()).isFalse();
  }

  @Test
  void anInlineSchemaIsCheckedWhenParsed() {
    assertThat(scorer("json:schema=\"{\\\"type\\\":\\\"string\\\"}\"").score(json("{\"id\":\"1\"}"), "\"x\"").passed()).isTrue();
    assertThatThrownBy(() -> scorer("json:schema={")).hasMessageContaining("schema is not JSON");
    assertThatThrownBy(() -> scorer("json:schema=3")).hasMessageContaining("schema is not a JSON Schema");
    assertThatThrownBy(() -> scorer("json:schema=true,parses")).hasMessageContaining("at most one of schema, schema-file, schema-field and parses");
  }

  @Test
  void aTargetStringThatIsNotJsonTextIsTheCasesError() {
    assertThatThrownBy(() -> scorer("json").score(target("\"hello\""), "\"hello\""))
        .isInstanceOf(ScoringException.class)
        .hasMessageContaining("case field \"target\" is a string but not JSON text");
  }

  @Test
  void aSchemaThatCannotBeUsedOrANumberBeyondRangeIsTheCasesErrorNotACrash() {
    String remote = "{\"id\":\"a\",\"s\":{\"$ref\":\"http://127.0.0.1:9/x.json\"}}";
    assertThatThrownBy(() -> ScorerTesting.score("json:schema-field=s", remote, "{\"a\":1}"))
        .isInstanceOf(ScoringException.class)
        .hasMessageContaining("case field \"s\" is not a JSON Schema: it refers to http://127.0.0.1:9/x.json, which is not in the schema");
    String cycle = "{\"id\":\"a\",\"s\":{\"$ref\":\"#/definitions/x\",\"definitions\":{\"x\":{\"$ref\":\"#/definitions/x\"}}}}";
    assertThatThrownBy(() -> ScorerTesting.score("json:schema-field=s", cycle, "{\"a\":1}"))
        .isInstanceOf(ScoringException.class).hasMessageContaining("refers to itself without end");
    // 1e400 is an infinity once read: it equals nothing, not even itself, rather than crash the comparison.
    assertThat(ScorerTesting.score("json", "{\"id\":\"a\",\"target\":1}", "1e400").passed()).isFalse();
    assertThat(ScorerTesting.score("json", "{\"id\":\"a\",\"target\":[1]}", "[1e400]").passed()).isFalse();
    assertThat(ScorerTesting.score("json", "{\"id\":\"a\",\"target\":[1.5]}", "[1.50]").passed()).isTrue();
  }
}
