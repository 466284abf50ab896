package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

class CommandTemplateTest {
  private static JsonNode json(String s) {
    return CaseJson.parseObject(s);
  }

  @Test
  void splitsOnWhitespaceAndKeepsQuotedStretchesWhole() throws Exception {
    CommandTemplate t = CommandTemplate.parse("python3  -m   'my tests' \"a 'b' c\" 'it''s'");
    assertThat(t.fill(json("{}"))).containsExactly("python3", "-m", "my tests", "a 'b' c", "it's");
  }

  /** Pins a documented difference from a shell: a quote opens only at the start of an argument. */
  @Test
  void aQuoteInsideAnArgumentIsAnOrdinaryCharacter() throws Exception {
    CommandTemplate t = CommandTemplate.parse("run --name='a b'");
    assertThat(t.fill(json("{}"))).containsExactly("run", "--name='a", "b'");
  }

  @Test
  void fillsPlaceholdersInsideTheirOwnArgumentOnly() throws Exception {
    CommandTemplate t = CommandTemplate.parse("run --id={id} {q}");
    assertThat(t.fill(json("{\"id\": \"a b\", \"q\": \"1 2 3\"}"))).containsExactly("run", "--id=a b", "1 2 3");
  }

  @Test
  void doubledBracesAreLiteralAndNonIdentifierBracesAreLeftAlone() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo ${{HOME}} {\"a\":1} {print $1}' {x}");
    assertThat(t.fill(json("{\"x\": \"v\"}"))).containsExactly("sh", "-c", "echo ${HOME} {\"a\":1} {print $1}", "v");
  }

  @Test
  void aMissingFieldNamesTheField() {
    CommandTemplate t = CommandTemplate.parse("echo {nope}");
    assertThatThrownBy(() -> t.fill(json("{}")))
        .isInstanceOf(CommandTemplate.MissingFieldException.class)
        .hasMessageContaining("'nope'");
  }

  @Test
  void fieldsAreThePlaceholdersOnlyNotEscapedOrNonIdentifierBraces() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo ${{HOME}} {\"a\":1} {print $1} {x}' {id} {x} {y}");
    assertThat(t.fields()).containsExactly("x", "id", "y");
    assertThat(t.missingField(json("{\"x\": 1, \"id\": \"a\", \"y\": null}"))).isEmpty();
    assertThat(t.missingField(json("{\"x\": 1, \"HOME\": \"/\"}"))).contains("id");
    assertThat(CommandTemplate.parse("sh -c \"echo ${{HOME}}\"").fields()).isEmpty();
  }

  @Test
  void anEmptyTemplateIsRefused() {
    assertThatThrownBy(() -> CommandTemplate.parse("   ")).isInstanceOf(IllegalArgumentException.class);
  }
}
