package dev.tally.core;

import java.util.Locale;
import java.util.Optional;

/**
 * The one rule for characters that do not show as themselves: control characters (C0, DEL and C1, {@link
 * Character#isISOControl}: an escape sequence recolours or retitles a terminal, a backspace rubs out what
 * came before), invisible format characters (Unicode category Cf: bidirectional overrides and isolates,
 * zero-width spaces and joiners, the byte-order mark, tag characters), which make one text look like another
 * ("Trojan Source", Boucher and Anderson, 2021), and the line and paragraph separators (U+2028, U+2029),
 * which break a line where none shows, and a surrogate that is not half of a pair (no character at all:
 * UTF-8 cannot carry it, and each reader shows it differently, if at all). Names Tally stores and prints
 * (case ids, run names) may hold none of them, as PRECIS's identifier class disallows both (RFC 8264,
 * section 9); text Tally only shows (a case's output) has them replaced when printed. Stateless; thread-safe.
 */
public final class HiddenCharacters {
  private HiddenCharacters() {}

  /**
   * Whether {@code codePoint} does not show as itself: a control character, an invisible format character,
   * a line or paragraph separator, or a surrogate (read by code points, a surrogate is one without its pair).
   * Alone: the joiners' context is {@link #isHiddenAt}'s.
   *
   * @param codePoint a Unicode code point
   */
  public static boolean isHidden(int codePoint) {
    int type = Character.getType(codePoint);
    return Character.isISOControl(codePoint) || type == Character.FORMAT
        || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR || type == Character.SURROGATE;
  }

  private static final int ZERO_WIDTH_NON_JOINER = 0x200C;
  private static final int ZERO_WIDTH_JOINER = 0x200D;

  /**
   * Whether the code point at {@code index} of {@code text} does not show as itself ({@link #isHidden}), but
   * for the zero-width joiner and non-joiner between two visible non-ASCII characters: there they are part of
   * the writing (Persian and Indic words, emoji sequences such as a family), as RFC 5892's CONTEXTJ rules
   * allow them in PRECIS identifiers, though more loosely; beside ASCII, or at either end, they only make one
   * name look like another.
   *
   * @param text the text
   * @param index a char index of {@code text} where a code point starts
   * @throws IndexOutOfBoundsException if {@code index} is not within {@code text}
   */
  public static boolean isHiddenAt(CharSequence text, int index) {
    int cp = Character.codePointAt(text, index);
    if (cp != ZERO_WIDTH_NON_JOINER && cp != ZERO_WIDTH_JOINER) {
      return isHidden(cp);
    }
    if (index == 0 || index + 1 >= text.length()) {
      return true;
    }
    int before = Character.codePointBefore(text, index);
    int after = Character.codePointAt(text, index + 1);
    return before < 0x80 || after < 0x80 || isHidden(before) || isHidden(after);
  }

  /**
   * What is wrong with {@code text} as a name, or empty if it holds no hidden character: the first one, by
   * its code point and its position, as a phrase ({@code "holds U+202E at character 3, an invisible format
   * character"}) for the caller to put after what the text is.
   *
   * @param text the name to check
   * @return the problem, or empty
   */
  public static Optional<String> problem(String text) {
    int position = 1;
    for (int i = 0; i < text.length(); position++) {
      int cp = text.codePointAt(i);
      if (isHiddenAt(text, i)) {
        int type = Character.getType(cp);
        String kind = Character.isISOControl(cp) ? "a control character"
            : type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR ? "a line or paragraph separator"
            : type == Character.SURROGATE ? "half of a surrogate pair without its other half (no character at all)"
            : "an invisible format character (a bidirectional override, a zero-width space or the like, which"
                + " makes one name look like another)";
        return Optional.of(String.format(Locale.ROOT, "holds U+%04X at character %d, %s", cp, position, kind));
      }
      i += Character.charCount(cp);
    }
    return Optional.empty();
  }

  /**
   * {@code text} with every character that does not show as itself ({@link #isHiddenAt}) written as JSON
   * escapes (a backslash, {@code u} and four hex digits for each of its UTF-16 units: RFC 8259, section 7),
   * and the rest as it is: for text from a dataset quoted as a JSON string in a message (a member's name),
   * where a terminal would show a {@code ?} or nothing at all. Escape quotes and backslashes first: this
   * adds only escapes of its own.
   *
   * @param text the text, such as the inside of a JSON string literal
   * @return the text with its hidden characters escaped ({@code text} itself when it holds none)
   */
  public static String escaped(String text) {
    StringBuilder shown = null;
    for (int i = 0; i < text.length(); ) {
      int cp = text.codePointAt(i);
      int units = Character.charCount(cp);
      if (isHiddenAt(text, i)) {
        if (shown == null) {
          shown = new StringBuilder(text.length() + 12).append(text, 0, i);
        }
        for (int k = i; k < i + units; k++) {
          shown.append(String.format(Locale.ROOT, "\\u%04X", (int) text.charAt(k)));
        }
      } else if (shown != null) {
        shown.append(text, i, i + units);
      }
      i += units;
    }
    return shown == null ? text : shown.toString();
  }
}
