package dev.tally.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads a duration option: a whole number with a unit ({@code 500ms}, {@code 30s}, {@code 10m},
 * {@code 2h}) or an ISO-8601 duration ({@code PT10M}); and writes one back the same way ({@link #text}),
 * for help defaults and messages, so that a user reads {@code 0s} where they typed it, not {@code PT0S}.
 *
 * <p>Thread-safety: stateless.
 */
public final class DurationConverter implements ITypeConverter<Duration> {
  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h)");

  /** The longest duration any option takes: {@link dev.tally.core.Ticker#MAX_DURATION}. */
  public static final Duration MAX = dev.tally.core.Ticker.MAX_DURATION;

  /**
   * {@code d} as this converter reads it, in its largest whole unit: {@code 2h}, {@code 10m}, {@code 30s},
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

  @Override
  public Duration convert(String value) {
    Duration d;
    try {
      d = parse(value);
    } catch (ArithmeticException e) {
      d = null; // beyond what a Duration holds
    }
    if (d == null || d.compareTo(MAX) > 0) {
      throw new TypeConversionException("'" + value + "' is longer than the limit of " + MAX.toDays() + " days");
    }
    return d;
  }

  private static Duration parse(String value) {
    Matcher m = SIMPLE.matcher(value.trim());
    if (m.matches()) {
      long n;
      try {
        n = Long.parseLong(m.group(1));
      } catch (NumberFormatException e) {
        throw new TypeConversionException("'" + value + "' is longer than the limit of " + MAX.toDays() + " days");
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
      throw new TypeConversionException(
          "'" + value + "' is not a duration: use a whole number with ms, s, m or h (e.g. 30s), or ISO-8601 (PT30S)");
    }
  }
}
