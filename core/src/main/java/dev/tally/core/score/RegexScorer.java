package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * {@code regex}: the answer matches a Java regular expression ({@link Pattern}), found anywhere in it
 * unless {@code full} asks the whole answer to match. The pattern is the option {@code pattern=P}, else the
 * case's {@code target} (a string, or a list of patterns any of which may match). {@code ignore-case} makes
 * the match case-insensitive in Unicode. What was read is the first capturing group if the pattern has
 * one, else the whole match.
 *
 * <p>A pattern that backtracks without end on some answer ("catastrophic backtracking") would hold a slot
 * for ever; since a scorer reads no clock, the match is given a budget of {@link #MAX_CHAR_READS} reads of
 * the answer's characters instead, and a match that spends it is the case's error.
 *
 * <p>Thread-safety: immutable.
 */
final class RegexScorer implements Scorer {
  static final String KIND = "regex";
  static final String PATTERN = "pattern";
  static final String IGNORE_CASE = "ignore-case";
  static final String FULL = "full";

  /**
   * Character reads one match may make: a sane pattern reads each character of an answer of a few
   * kilobytes a handful of times; 50 million reads take well under a second, and only a runaway pattern
   * gets there.
   */
  static final long MAX_CHAR_READS = 50_000_000L;

  private final String name;
  private final Pattern pattern;
  private final int flags;
  private final boolean full;

  private RegexScorer(String name, Pattern pattern, int flags, boolean full) {
    this.name = name;
    this.pattern = pattern;
    this.flags = flags;
    this.full = full;
  }

  static Scorer of(Scorers.Context c) {
    int flags = c.flag(IGNORE_CASE) ? Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE : 0;
    Pattern pattern = null;
    if (c.value(PATTERN) != null) {
      try {
        pattern = Pattern.compile(c.value(PATTERN), flags);
      } catch (PatternSyntaxException e) {
        throw c.error("pattern does not compile: " + e.getDescription() + " near index " + e.getIndex());
      }
    }
    return new RegexScorer(c.name(), pattern, flags, c.flag(FULL));
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    List<Pattern> patterns = new ArrayList<>();
    if (pattern != null) {
      patterns.add(pattern);
    } else {
      List<String> texts = Targets.texts(KIND, caseFields);
      for (int i = 0; i < texts.size(); i++) {
        try {
          patterns.add(Pattern.compile(texts.get(i), flags));
        } catch (PatternSyntaxException e) {
          throw new ScoringException(KIND + ": case field \"target\"" + (texts.size() > 1 ? "[" + i + "]" : "")
              + " is not a regular expression: " + e.getDescription() + " near index " + e.getIndex());
        }
      }
    }
    String text = answer == null ? "" : answer;
    for (Pattern p : patterns) {
      Matcher m = p.matcher(new BudgetedText(text));
      boolean hit;
      try {
        hit = full ? m.matches() : m.find();
      } catch (BudgetSpent e) {
        throw new ScoringException(KIND + ": pattern " + Targets.quote(p.pattern()) + " read the answer's characters "
            + MAX_CHAR_READS + " times without an answer (catastrophic backtracking?); simplify it");
      }
      if (hit) {
        String read = m.groupCount() >= 1 && m.group(1) != null ? m.group(1) : m.group();
        return ScoreResult.pass(read, (full ? "matches " : "finds ") + Targets.quote(p.pattern()));
      }
    }
    return ScoreResult.fail(null, patterns.size() == 1
        ? (full ? "does not match " : "does not find ") + Targets.quote(patterns.get(0).pattern())
        : "none of the " + patterns.size() + " patterns " + (full ? "matches" : "is found"));
  }

  private static final class BudgetSpent extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BudgetSpent() {
      super(null, null, false, false);
    }
  }

  /** The answer's text, counting reads against one shared budget (sub-sequences share it). */
  private static final class BudgetedText implements CharSequence {
    private final String text;
    private final int offset;
    private final int length;
    private final long[] reads;

    BudgetedText(String text) {
      this(text, 0, text.length(), new long[1]);
    }

    private BudgetedText(String text, int offset, int length, long[] reads) {
      this.text = text;
      this.offset = offset;
      this.length = length;
      this.reads = reads;
    }

    @Override
    public int length() {
      return length;
    }

    @Override
    public char charAt(int index) {
      if (++reads[0] > MAX_CHAR_READS) {
        throw new BudgetSpent();
      }
      return text.charAt(offset + index);
    }

    @Override
    public CharSequence subSequence(int start, int end) {
      return new BudgetedText(text, offset + start, end - start, reads);
    }

    @Override
    public String toString() {
      return text.substring(offset, offset + length);
    }
  }
}
