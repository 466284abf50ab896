package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class JsonErrorsTest {
  private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private static String textOf(String json) {
    return JsonErrors.text(catchThrowableOfType(() -> JSON.readTree(json), JsonProcessingException.class));
  }

  /** Before, each of these reached people with the parser's class and feature names in it (the breaker round). */
  @Test
  void theParsersInternalsAreLeftOutAndWhatAndWhereStay() {
    assertThat(textOf("{\"a\": NaN}")).isEqualTo("Non-standard token 'NaN'");
    assertThat(textOf("{")).startsWith("Unexpected end-of-input: expected close marker for Object")
        .contains("opened at line 1, column 1").doesNotContain("Source").doesNotContain("REDACTED").doesNotContain("`");
    assertThat(textOf("{} {}")).isEqualTo("a second JSON value follows the first (one value is expected)");
    assertThat(textOf("[".repeat(2000))).contains("nesting depth").doesNotContain("`").doesNotContain("StreamReadConstraints");
    assertThat(textOf("{\"a\" 1}")).startsWith("Unexpected character ('1'").doesNotContain("`");
    assertThat(textOf("{\"id\": \"a\", /*c*/ \"x\": 1}")).isEqualTo("Unexpected character ('/' (code 47)): a comment? JSON has none");
  }

  /** A new user read "opened at line 1" on cases.jsonl:2 as the file's first line (the new-user trial). */
  @Test
  void aLineOfJsonLinesSaysOnlyColumns() {
    JsonProcessingException e = catchThrowableOfType(() -> JSON.readTree("{\"id\": \"b\""), JsonProcessingException.class);
    assertThat(JsonErrors.lineText(e)).startsWith("Unexpected end-of-input: expected close marker for Object")
        .contains("(opened at column 1)").doesNotContain("line");
    JsonProcessingException late = catchThrowableOfType(() -> JSON.readTree("{\"id\": \"b\", \"x\": tru}"), JsonProcessingException.class);
    assertThat(JsonErrors.lineText(late)).startsWith("Unrecognized token 'tru'").doesNotContain("line");
  }
}
