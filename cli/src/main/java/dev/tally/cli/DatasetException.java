package dev.tally.cli;

import java.nio.file.Path;

/** A dataset that cannot be submitted: the message names the file and, where there is one, the line. */
public final class DatasetException extends Exception {
  private final Path file;
  private final int line;

  /**
   * @param file the dataset file
   * @param line the 1-based line, or 0 when the problem is not on one line
   * @param message what is wrong, as a sentence
   */
  public DatasetException(Path file, int line, String message) {
    super(file + (line > 0 ? ":" + line : "") + ": " + message);
    this.file = file;
    this.line = line;
  }

  /** A dataset file that cannot be read, in the words every dataset reader uses ({@code CaseSourceException#cannotRead}). */
  public static DatasetException cannotRead(Path file, java.io.IOException e) {
    return new DatasetException(file, 0, dev.tally.core.cases.CaseSourceException.cannotRead(e));
  }

  public Path file() {
    return file;
  }

  /** The 1-based line, or 0 when the problem is not on one line. */
  public int line() {
    return line;
  }
}
