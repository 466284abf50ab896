package dev.tally.core.score;

import java.text.Normalizer;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * How {@code exact} and {@code includes} make an answer and a target comparable. Always: Unicode NFC (so a
 * composed and a decomposed "é" are the same text) and white space stripped at both ends (an answer read
 * from output ends in a newline). Then, in this order, when asked:
 *
 * <ul>
 *   <li>{@code ignore-case}: full case folding (upper then lower case, root locale), so "Straße" equals
 *       "STRASSE";
 *   <li>{@code ignore-punctuation}: every Unicode punctuation character (category P) becomes a space, so
 *       "well,done" still has two words; symbols ({@code + $ %}) are kept, since they carry meaning ("C++");
 *   <li>{@code ignore-articles}: the English words "a", "an" and "the" are removed, in any case;
 *   <li>{@code ignore-whitespace}: all white space is removed ("1 000" equals "1000"). Without it, runs of
 *       white space left by the steps above still count as they are.
 * </ul>
 *
 * <p>Thread-safety: immutable.
 */
record TextNormalizer(boolean ignoreCase, boolean ignoreWhitespace, boolean ignorePunctuation, boolean ignoreArticles) {
  static final String IGNORE_CASE = "ignore-case";
  static final String IGNORE_WHITESPACE = "ignore-whitespace";
  static final String IGNORE_PUNCTUATION = "ignore-punctuation";
  static final String IGNORE_ARTICLES = "ignore-articles";
  static final List<String> FLAGS = List.of(IGNORE_CASE, IGNORE_WHITESPACE, IGNORE_PUNCTUATION, IGNORE_ARTICLES);

  private static final Pattern PUNCTUATION = Pattern.compile("\\p{P}");
  private static final Pattern ARTICLES = Pattern.compile("(?iU)\\b(?:a|an|the)\\b\\s*");
  private static final Pattern WHITESPACE = Pattern.compile("(?U)\\s+");
  private static final Pattern SPACES_AROUND = Pattern.compile("(?U)^\\s+|\\s+$");

  static TextNormalizer of(Scorers.Context c) {
    return new TextNormalizer(c.flag(IGNORE_CASE), c.flag(IGNORE_WHITESPACE), c.flag(IGNORE_PUNCTUATION), c.flag(IGNORE_ARTICLES));
  }

  String apply(String text) {
    String s = Normalizer.normalize(text, Normalizer.Form.NFC);
    if (ignoreCase) {
      s = s.toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT);
    }
    if (ignorePunctuation) {
      s = PUNCTUATION.matcher(s).replaceAll(" ");
    }
    if (ignoreArticles) {
      s = ARTICLES.matcher(s).replaceAll("");
    }
    if (ignoreWhitespace) {
      s = WHITESPACE.matcher(s).replaceAll("");
    }
    return SPACES_AROUND.matcher(s).replaceAll("");
  }
}
