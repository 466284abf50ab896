package dev.tally.cli;

import dev.tally.core.DurationText;
import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads a duration option in Tally's duration text ({@link DurationText}, its one owner, which the HTTP
 * API reads too): a whole number with a unit ({@code 500ms}, {@code 30s}, {@code 10m}, {@code 2h}) or an
 * ISO-8601 duration ({@code PT10M}); and writes one back the same way ({@link #text}), for help defaults
 * and messages, so that a user reads {@code 0s} where they typed it, not {@code PT0S}.
 *
 * <p>Thread-safety: stateless.
 */
public final class DurationConverter implements ITypeConverter<Duration> {
  /** The longest duration any option takes: {@link DurationText#MAX}. */
  public static final Duration MAX = DurationText.MAX;

  /** {@code d} in Tally's duration text: {@link DurationText#text}. */
  public static String text(Duration d) {
    return DurationText.text(d);
  }

  @Override
  public Duration convert(String value) {
    try {
      return DurationText.parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }
}
