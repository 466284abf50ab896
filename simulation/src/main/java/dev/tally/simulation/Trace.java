package dev.tally.simulation;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The textual record of one history: one line per meaningful event, each starting with its virtual time
 * in milliseconds. Its SHA-256 is the history's fingerprint: the same seed must give the same hash, byte
 * for byte. The text itself is kept only when asked for (a replay prints it); the hash always.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class Trace {
  private final MessageDigest digest;
  private final StringBuilder text;
  private long lines;

  Trace(boolean keepText) {
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    text = keepText ? new StringBuilder() : null;
  }

  /** Appends one line at virtual time {@code atMillis}. */
  void line(long atMillis, String event) {
    // As "%9d %s%n" would print it, without the formatter's cost (a trace line is written per event).
    String time = Long.toString(atMillis);
    StringBuilder b = new StringBuilder(12 + event.length());
    for (int i = time.length(); i < 9; i++) {
      b.append(' ');
    }
    String line = b.append(time).append(' ').append(event).append(System.lineSeparator()).toString();
    digest.update(line.getBytes(StandardCharsets.UTF_8));
    lines++;
    if (text != null) {
      text.append(line);
    }
  }

  long lines() {
    return lines;
  }

  /** The text, or null if it was not kept. */
  String text() {
    return text == null ? null : text.toString();
  }

  /** The hex SHA-256 of every line so far. Call once, at the end. */
  String hash() {
    return HexFormat.of().formatHex(digest.digest());
  }
}
