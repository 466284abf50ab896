package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HiddenCharactersTest {
  @Test
  void escapedWritesEachHiddenCharacterAsItsJsonEscapesAndLeavesTheRest() {
    assertThat(HiddenCharacters.escaped("plain caf\u00e9")).isEqualTo("plain caf\u00e9");
    assertThat(HiddenCharacters.escaped("a\u202Eb\u200Bc\u2028")).isEqualTo("a\\u202Eb\\u200Bc\\u2028");
    assertThat(HiddenCharacters.escaped("\u0007bell\u0085")).isEqualTo("\\u0007bell\\u0085");
    // a tag character (outside the BMP) is two units, each escaped, as JSON writes it
    assertThat(HiddenCharacters.escaped("x\uDB40\uDC41")).isEqualTo("x\\uDB40\\uDC41");
    // a lone surrogate is no character: escaped too; a pair is one visible character and stays
    assertThat(HiddenCharacters.escaped("\uD800x\uD83D\uDE00")).isEqualTo("\\uD800x\uD83D\uDE00");
    // the joiner between two visible non-ASCII letters is part of the word; beside ASCII it is not
    assertThat(HiddenCharacters.escaped("\u0628\u200C\u0627 a\u200Db")).isEqualTo("\u0628\u200C\u0627 a\\u200Db");
  }
}
