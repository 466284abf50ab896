package dev.tally.worker.eval;

/**
 * What the worker keeps of one output stream of a case: the last {@code tailLimit} characters, and the
 * last non-empty line (if it is at most {@code lineLimit} characters), never the whole output.
 *
 * <p>Threading: one pump thread appends; the slot thread reads at the end. Every method is synchronized
 * (contention is nil: the reader comes after the writer, or after giving up on it).
 */
final class OutputCapture {
  private final char[] ring;
  private long written;

  private final int lineLimit;
  private final StringBuilder line = new StringBuilder();
  private boolean lineOverflow;
  private boolean overflowStartedWithBrace;
  private String lastLine;
  private boolean lastLineTooLong;
  /** The last line was too long and began (after blanks) with '{': a verdict object that could not be read. */
  private boolean lastLineTooLongObject;

  /**
   * @param tailLimit characters of tail to keep
   * @param lineLimit longest line worth remembering as the last line (0 to track no lines)
   */
  OutputCapture(int tailLimit, int lineLimit) {
    this.ring = new char[tailLimit];
    this.lineLimit = lineLimit;
  }

  synchronized void append(char[] buf, int off, int len) {
    for (int i = off; i < off + len; i++) {
      char c = buf[i];
      if (ring.length > 0) {
        ring[(int) (written % ring.length)] = c;
      }
      written++;
      if (lineLimit > 0) {
        trackLine(c);
      }
    }
  }

  private void trackLine(char c) {
    if (c == '\n') {
      endLine();
    } else if (!lineOverflow) {
      if (line.length() < lineLimit) {
        line.append(c);
      } else {
        lineOverflow = true;
        overflowStartedWithBrace = line.toString().stripLeading().startsWith("{");
        line.setLength(0);
      }
    }
  }

  private void endLine() {
    if (lineOverflow) {
      // Too long to be a verdict line, but it is the last non-empty line so far.
      lastLine = null;
      lastLineTooLong = true;
      lastLineTooLongObject = overflowStartedWithBrace;
    } else if (!line.toString().isBlank()) {
      lastLine = line.toString();
      lastLineTooLong = false;
      lastLineTooLongObject = false;
    }
    overflowStartedWithBrace = false;
    line.setLength(0);
    lineOverflow = false;
  }

  /** Ends a last line that had no newline. Call once the stream is at its end. */
  synchronized void finish() {
    if (lineLimit > 0 && (lineOverflow || line.length() > 0)) {
      endLine();
    }
  }

  /** The last non-empty line, or null if there was none or it was longer than the line limit. */
  synchronized String lastNonEmptyLine() {
    return lastLineTooLong ? null : lastLine;
  }

  /**
   * Whether the last non-empty line was longer than the line limit and began with '{': most likely a
   * verdict object too long to read, which must not be silently ignored.
   */
  synchronized boolean lastLineIsAnOverlongObject() {
    return lastLineTooLong && lastLineTooLongObject;
  }

  /** The last {@code tailLimit} characters written. */
  synchronized String tail() {
    int n = (int) Math.min(written, ring.length);
    StringBuilder sb = new StringBuilder(n);
    for (long i = written - n; i < written; i++) {
      sb.append(ring[(int) (i % ring.length)]);
    }
    return sb.toString();
  }

  /**
   * Joins a stdout tail and a stderr tail into at most {@code limit} characters, stdout first. When both
   * do not fit, stderr keeps at least half the budget (errors are what a person looks for), stdout the
   * rest, each keeping its own last characters.
   */
  static String joinTails(String stdout, String stderr, int limit) {
    String sep = !stdout.isEmpty() && !stderr.isEmpty() && !stdout.endsWith("\n") ? "\n" : "";
    if (stdout.length() + sep.length() + stderr.length() <= limit) {
      return stdout + sep + stderr;
    }
    int budget = limit - sep.length();
    int errBudget = Math.min(stderr.length(), Math.max(budget / 2, budget - stdout.length()));
    int outBudget = budget - errBudget;
    return lastChars(stdout, outBudget) + sep + lastChars(stderr, errBudget);
  }

  private static String lastChars(String s, int n) {
    return s.length() <= n ? s : s.substring(s.length() - n);
  }
}
