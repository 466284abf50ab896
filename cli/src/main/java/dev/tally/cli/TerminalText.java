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
      shown.appendCodePoint(dev.tally.core.HiddenCharacters.isHiddenAt(text, i - Character.charCount(cp)) ? '?' : cp);
      count++;
    }
    return shown.toString();
  }

  /**
   * {@code text} as a terminal may show it, whole: as {@link #safe}, but line feeds and tabs are kept and
   * nothing is cut. For log lines, which carry their own line breaks (a stack trace's).
   */
  static String safeKeepingLines(String text) {
    StringBuilder shown = null; // made only when something is replaced: most lines have nothing to replace
    for (int i = 0; i < text.length(); ) {
      int cp = text.codePointAt(i);
      boolean hidden = cp != '\n' && cp != '\t' && dev.tally.core.HiddenCharacters.isHiddenAt(text, i);
      if (hidden && shown == null) {
        shown = new StringBuilder(text.length()).append(text, 0, i);
      }
      if (shown != null) {
        shown.appendCodePoint(hidden ? '?' : cp);
      }
      i += Character.charCount(cp);
    }
    return shown == null ? text : shown.toString();
  }

  /**
   * A writer to a terminal that passes on what {@link #safe} would show: every hidden character ({@link
   * dev.tally.core.HiddenCharacters}) becomes {@code ?}, but for line feeds and tabs, which messages use. For
   * the command line's error stream, where messages quote whatever a dataset, a server or an option held; a
   * character split across two writes (a surrogate pair) is judged whole, and each alone (a zero-width joiner
   * too, which {@link #safe} keeps inside a word). Not thread-safe beyond what the
   * {@link java.io.PrintWriter} around it gives.
   *
   * @param out where the text goes (standard error)
   * @return a writer that flushes to {@code out} when told to
   */
  static java.io.PrintWriter writer(java.io.OutputStream out) {
    java.io.Writer to = new java.io.OutputStreamWriter(out, java.nio.charset.Charset.defaultCharset());
    return new java.io.PrintWriter(new java.io.FilterWriter(to) {
      private char pendingHigh; // a high surrogate whose low half is in the next write; 0 if none

      @Override
      public void write(int c) throws java.io.IOException {
        write(new char[] {(char) c}, 0, 1);
      }

      @Override
      public void write(String s, int off, int len) throws java.io.IOException {
        write(s.toCharArray(), off, len);
      }

      @Override
      public void write(char[] buf, int off, int len) throws java.io.IOException {
        StringBuilder shown = new StringBuilder(len + 1);
        for (int i = off; i < off + len; i++) {
          char c = buf[i];
          if (pendingHigh != 0) {
            char high = pendingHigh;
            pendingHigh = 0;
            if (Character.isLowSurrogate(c)) {
              int cp = Character.toCodePoint(high, c);
              shown.append(dev.tally.core.HiddenCharacters.isHidden(cp) ? "?" : new String(Character.toChars(cp)));
              continue;
            }
            shown.append('?'); // half a pair
          }
          if (Character.isHighSurrogate(c)) {
            pendingHigh = c;
          } else if (c == '\n' || c == '\t') {
            shown.append(c);
          } else {
            shown.append(Character.isSurrogate(c) || dev.tally.core.HiddenCharacters.isHidden(c) ? '?' : c);
          }
        }
        out.write(shown.toString());
      }
    }, true);
  }
}
