package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code choice}: a multiple-choice answer. The case's {@code choices} is a list of strings, named by the
 * letters A, B, C... in order (at most {@link #MAX_CHOICES}); its {@code target} is a letter or the text of a
 * choice (or a list of them, any one right).
 *
 * <p>The answer's letter is read by the first of these rules that finds one:
 *
 * <ol>
 *   <li>the whole answer is a letter of a choice, in either case, perhaps in brackets or followed by
 *       {@code .}, {@code )} or {@code :} ({@code "B"}, {@code "(b)"}, {@code "C."});
 *   <li>the whole answer is a choice's text, ignoring case, surrounding white space and a final period;
 *   <li>the last "answer is X", "answer: X" or "answer is option X" (any case for the words; X a capital
 *       letter of a choice, perhaps in brackets);
 *   <li>the answer starts with a capital letter of a choice followed by {@code .} or {@code )} and white
 *       space, or with one in brackets ({@code "B. Paris"}, {@code "(B) Paris"}).
 * </ol>
 *
 * Nothing found is a fail that says so. Thread-safety: immutable.
 */
final class ChoiceScorer implements Scorer {
  static final String KIND = "choice";

  /** Letters A to Z name the choices. */
  static final int MAX_CHOICES = 26;

  private static final Pattern BARE_LETTER = Pattern.compile("[(\\[]?([A-Za-z])[)\\]]?[.:)]?");
  private static final Pattern ANSWER_IS = Pattern.compile("(?i:answer)\\s*(?:(?i:is)\\s*)?:?\\s*(?:(?i:option|choice|letter)\\s*)?[(\\[]?([A-Z])(?![\\p{L}\\p{N}])");
  private static final Pattern LEADING = Pattern.compile("^(?:([A-Z])[.)]|[(\\[]([A-Z])[)\\]])(?:\\s|$)");
  private static final Pattern WHITESPACE = Pattern.compile("(?U)\\s+");

  private final String name;

  private ChoiceScorer(String name) {
    this.name = name;
  }

  static Scorer of(Scorers.Context c) {
    return new ChoiceScorer(c.name());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    List<String> choices = choices(caseFields);
    List<String> targets = Targets.texts(KIND, caseFields);
    List<Character> right = new ArrayList<>();
    for (int i = 0; i < targets.size(); i++) {
      right.add(targetLetter(targets.get(i), choices, targets.size() > 1 ? "target[" + i + "]" : "target"));
    }
    Character letter = read(answer == null ? "" : answer, choices);
    if (letter == null) {
      return ScoreResult.fail(null, "no choice letter (A-" + last(choices) + ") or choice text in the answer");
    }
    String read = String.valueOf(letter);
    if (right.contains(letter)) {
      return ScoreResult.pass(read, "chose " + letter + ", the right choice");
    }
    return ScoreResult.fail(read, "chose " + letter + "; right: " + joinLetters(right));
  }

  private static List<String> choices(JsonNode caseFields) {
    JsonNode node = Targets.field(KIND, caseFields, Targets.CHOICES);
    if (!node.isArray() || node.isEmpty()) {
      throw new ScoringException(KIND + ": case field \"choices\" must be a non-empty list of strings; got "
          + (node.isArray() ? "an empty list" : Targets.shape(node)));
    }
    if (node.size() > MAX_CHOICES) {
      throw new ScoringException(KIND + ": case field \"choices\" has " + node.size() + " choices; letters A-Z name at most " + MAX_CHOICES);
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < node.size(); i++) {
      if (!node.get(i).isTextual()) {
        throw new ScoringException(KIND + ": case field \"choices[" + i + "]\" must be a string; got " + Targets.shape(node.get(i)));
      }
      out.add(node.get(i).textValue());
    }
    return out;
  }

  private static char targetLetter(String target, List<String> choices, String where) {
    String t = target.strip();
    if (t.length() == 1 && Character.isLetter(t.charAt(0))) {
      int index = Character.toUpperCase(t.charAt(0)) - 'A';
      if (index >= 0 && index < choices.size()) {
        return (char) ('A' + index);
      }
    }
    int byText = indexOfText(t, choices);
    if (byText >= 0) {
      return (char) ('A' + byText);
    }
    throw new ScoringException(KIND + ": case field \"" + where + "\" " + Targets.quote(target)
        + " is neither a letter A-" + last(choices) + " nor the text of one of the " + choices.size() + " choices");
  }

  private static Character read(String answer, List<String> choices) {
    String a = answer.strip();
    Matcher bare = BARE_LETTER.matcher(a);
    if (bare.matches()) {
      Character c = inRange(Character.toUpperCase(bare.group(1).charAt(0)), choices);
      if (c != null) {
        return c;
      }
    }
    int byText = indexOfText(a, choices);
    if (byText >= 0) {
      return (char) ('A' + byText);
    }
    Matcher is = ANSWER_IS.matcher(a);
    Character found = null;
    while (is.find()) {
      Character c = inRange(is.group(1).charAt(0), choices);
      if (c != null) {
        found = c;
      }
    }
    if (found != null) {
      return found;
    }
    Matcher leading = LEADING.matcher(a);
    if (leading.find()) {
      String g = leading.group(1) != null ? leading.group(1) : leading.group(2);
      return inRange(g.charAt(0), choices);
    }
    return null;
  }

  private static Character inRange(char upper, List<String> choices) {
    int index = upper - 'A';
    return index >= 0 && index < choices.size() ? upper : null;
  }

  private static int indexOfText(String text, List<String> choices) {
    String t = comparable(text);
    for (int i = 0; i < choices.size(); i++) {
      if (comparable(choices.get(i)).equals(t)) {
        return i;
      }
    }
    return -1;
  }

  private static String comparable(String s) {
    String t = WHITESPACE.matcher(Normalizer.normalize(s, Normalizer.Form.NFC).strip()).replaceAll(" ");
    if (t.endsWith(".")) {
      t = t.substring(0, t.length() - 1).strip();
    }
    return t.toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT);
  }

  private static char last(List<String> choices) {
    return (char) ('A' + choices.size() - 1);
  }

  private static String joinLetters(List<Character> letters) {
    StringBuilder b = new StringBuilder();
    for (Character c : letters) {
      if (b.indexOf(String.valueOf(c)) < 0) {
        b.append(b.length() == 0 ? "" : " or ").append(c);
      }
    }
    return b.toString();
  }
}
