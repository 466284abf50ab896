package dev.tally.cli;

/**
 * Text from outside (a case's output, an argument typed on the command line) as a terminal may be given it:
 * the one rule for what tally prints of such text. Stateless; thread-safe.
 */
final class TerminalText {
  private TerminalText() {}

  /**
   * {@code text} as a terminal may show it: the characters that do not show as themselves ({@link
   * dev.tally.core.HiddenCharacters}: controls, whose escape sequences would recolour or retitle the
   * terminal, and invisible format characters, which make one text look like another) become {@code ?},
   * and it is cut to {@code maxChars} code points, ending in {@code ...}, never inside a character.
   */
  static String safe(String text, int maxChars) {
    StringBuilder shown = new StringBuilder();
    int count = 0;
    for (int i = 0; i < text.length(); ) {
      int cp = text.codePointAt(i);
      i += Character.charCount(cp);
      if (count == maxChars - 3 && text.codePointCount(i - Character.charCount(cp), text.length()) > 3) {
        return shown.append("...").toString();
      }
      shown.appendCodePoint(dev.tally.core.HiddenCharacters.isHidden(cp) ? '?' : cp);
      count++;
    }
    return shown.toString();
  }
}
