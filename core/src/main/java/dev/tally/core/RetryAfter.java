package dev.tally.core;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A {@code Retry-After} header's wait (RFC 9110, section 10.2.3), the one reading of it for every client in
 * Tally (the command line's API client, the model evaluator's calls). They had one each: the model
 * evaluator took {@code 2d} for two seconds (Java's number syntax) and no date; the API client no fraction.
 *
 * <p>Thread-safety: stateless.
 */
public final class RetryAfter {
  private RetryAfter() {}

  /**
   * Delay-seconds: whole seconds as the RFC has them, or with a decimal fraction as some rate limiters send
   * them ({@code 0.5}); nothing else (no sign, exponent or suffix), at most nine digits each side.
   */
  private static final Pattern SECONDS = Pattern.compile("\\d{1,9}(\\.\\d{1,9})?");

  /**
   * The wait {@code value} asks for, from {@code now}.
   *
   * @param value the header's value; null for none
   * @param now the current time, which an HTTP date is measured from
   * @return delay-seconds as a duration (a fraction rounded up to the millisecond), or the time until an
   *     HTTP date (IMF-fixdate, RFC 1123), zero for one already past; empty for none or anything else
   */
  public static Optional<Duration> parse(String value, Instant now) {
    if (value == null) {
      return Optional.empty();
    }
    String v = value.strip();
    if (SECONDS.matcher(v).matches()) {
      return Optional.of(Duration.ofMillis((long) Math.ceil(Double.parseDouble(v) * 1000)));
    }
    try {
      Duration wait = Duration.between(now, ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant());
      return Optional.of(wait.isNegative() ? Duration.ZERO : wait);
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
