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
   *
   * @param maxChars the most code points returned, at least 3
   */
  static String safe(String text, int maxChars) {
    String shown = shown(text, false);
    if (shown.codePointCount(0, shown.length()) <= maxChars) {
      return shown;
    }
    return shown.substring(0, shown.offsetByCodePoints(0, maxChars - 3)) + "...";
  }

  /**
   * {@code text} as a terminal may show it, whole: as {@link #safe}, but line feeds and tabs are kept and
   * nothing is cut. For log lines, which carry their own line breaks (a stack trace's).
   */
  static String safeKeepingLines(String text) {
    return shown(text, true);
  }

  /**
   * {@code text} with every hidden character (and half of a surrogate pair) as {@code ?}, line feeds and tabs
   * kept if {@code keepLines}: the one loop of this class. The text itself when nothing is replaced.
   */
  private static String shown(CharSequence text, boolean keepLines) {
    StringBuilder shown = null; // made only when something is replaced: most text has nothing to replace
    for (int i = 0; i < text.length(); ) {
      int cp = Character.codePointAt(text, i);
      boolean hidden = !(keepLines && (cp == '\n' || cp == '\t'))
          && (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE // half a pair: codePointAt gives it alone
          || dev.tally.core.HiddenCharacters.isHiddenAt(text, i));
      if (hidden && shown == null) {
        shown = new StringBuilder(text.length()).append(text, 0, i);
      }
      if (shown != null) {
        shown.appendCodePoint(hidden ? '?' : cp);
      }
      i += Character.charCount(cp);
    }
    return shown == null ? text.toString() : shown.toString();
  }

  /**
   * A writer to a terminal that passes on what {@link #safeKeepingLines} would show: every hidden character
   * ({@link dev.tally.core.HiddenCharacters}) becomes {@code ?}, but for line feeds and tabs, which messages
   * use. For the command line's error stream, where messages quote whatever a dataset, a server or an option
   * held. Each write is judged as a whole, a surrogate pair split across two writes too; a zero-width joiner
   * at the very edge of a write is judged without its neighbour beyond it. Not thread-safe beyond what the
   * {@link java.io.PrintWriter} around it gives.
   *
   * @param out where the text goes (standard error)
   * @return a writer that flushes to {@code out} when told to
   */
  static java.io.PrintWriter writer(java.io.OutputStream out) {
    java.io.Writer to = new java.io.OutputStreamWriter(out, java.nio.charset.Charset.defaultCharset());
    return new java.io.PrintWriter(new java.io.FilterWriter(to) {
      private String pendingHigh = ""; // a high surrogate whose low half is in the next write

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
        String chunk = pendingHigh + new String(buf, off, len);
        pendingHigh = "";
        if (!chunk.isEmpty() && Character.isHighSurrogate(chunk.charAt(chunk.length() - 1))) {
          pendingHigh = chunk.substring(chunk.length() - 1);
          chunk = chunk.substring(0, chunk.length() - 1);
        }
        out.write(shown(chunk, true));
      }
    }, true);
  }
}
