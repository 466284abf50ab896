package dev.tally.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads a duration option: a whole number with a unit ({@code 500ms}, {@code 30s}, {@code 10m},
 * {@code 2h}) or an ISO-8601 duration ({@code PT10M}).
 */
public final class DurationConverter implements ITypeConverter<Duration> {
  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h)");

  @Override
  public Duration convert(String value) {
    Matcher m = SIMPLE.matcher(value.trim());
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
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
