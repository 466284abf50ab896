package dev.tally.core;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tally's duration text, the one grammar every place that reads or writes a duration uses (command-line
 * options, the HTTP API's settings, messages): a whole number with a unit ({@code 500ms}, {@code 30s},
 * {@code 10m}, {@code 2h}) or an ISO-8601 duration ({@code PT10M}); written back in its largest whole unit
 * ({@link #text}), so that a user reads {@code 0s} where they typed it, not {@code PT0S}.
 *
 * <p>Thread-safety: stateless.
 */
public final class DurationText {
  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h)");

  /** The longest duration any setting takes: {@link Ticker#MAX_DURATION}. */
  public static final Duration MAX = Ticker.MAX_DURATION;

  private DurationText() {}

  /**
   * {@code d} as {@link #parse} reads it, in its largest whole unit: {@code 2h}, {@code 10m}, {@code 30s},
   * {@code 1500ms}, {@code 0s}; a negative one with a minus sign ({@code -1s}, shown in a refusal only);
   * ISO-8601 for what has no whole number of milliseconds.
   */
  public static String text(Duration d) {
    if (d.isNegative()) {
      return "-" + text(d.negated());
    }
    if (!d.equals(Duration.ofMillis(d.toMillis()))) {
      return d.toString();
    }
    long millis = d.toMillis();
    if (millis == 0) {
      return "0s";
    }
    if (millis % 3_600_000 == 0) {
      return millis / 3_600_000 + "h";
    }
    if (millis % 60_000 == 0) {
      return millis / 60_000 + "m";
    }
    return millis % 1000 == 0 ? millis / 1000 + "s" : millis + "ms";
  }

  /** The grammar in words, for refusals. */
  private static final String GRAMMAR = "a duration is a whole number with ms, s, m or h (e.g. 30s; 0 alone is zero), or"
      + " ISO-8601 (PT30S)";

  /**
   * Reads a duration.
   *
   * @param value the text
   * @return the duration, at most {@link #MAX}
   * @throws IllegalArgumentException if {@code value} is not a duration of this grammar (the message says
   *     what is), is negative ({@code -5s}, {@code PT-5S}), or is longer than {@link #MAX}
   */
  public static Duration parse(String value) {
    Duration d;
    try {
      d = parseUnbounded(value);
    } catch (ArithmeticException e) {
      d = null; // beyond what a Duration holds
    }
    if (d != null && d.isNegative()) {
      throw new IllegalArgumentException("'" + value + "' is negative: " + GRAMMAR);
    }
    if (d == null || d.compareTo(MAX) > 0) {
      throw new IllegalArgumentException("'" + value + "' is longer than the limit of " + MAX.toDays() + " days");
    }
    return d;
  }

  private static Duration parseUnbounded(String value) {
    if (value.trim().equals("0")) {
      return Duration.ZERO; // zero is zero in any unit: --case-timeout 0 is then refused for its value, not its spelling
    }
    Matcher m = SIMPLE.matcher(value.trim());
    if (m.matches()) {
      long n;
      try {
        n = Long.parseLong(m.group(1));
      } catch (NumberFormatException e) {
        return null; // more digits than a long: longer than any limit
      }
      switch (m.group(2)) {
        case "ms":
          return Duration.ofMillis(n);
        case "s":
          return Duration.ofSeconds(n);
        case "m":
          return Duration.ofMinutes(n);
        default:
          return Duration.ofHours(n);
      }
    }
    try {
      return Duration.parse(value.trim());
    } catch (DateTimeParseException e) {
      String unsigned = value.trim().startsWith("-") ? value.trim().substring(1) : null;
      Matcher negative = unsigned == null ? null : SIMPLE.matcher(unsigned);
      if (negative != null && negative.matches() && !negative.group(1).chars().allMatch(c -> c == '0')) { // -5s; -0s is no duration
        throw new IllegalArgumentException("'" + value + "' is negative: " + GRAMMAR);
      }
      throw new IllegalArgumentException("'" + value + "' is not a duration: use " + GRAMMAR.substring("a duration is ".length()));
    }
  }
}
