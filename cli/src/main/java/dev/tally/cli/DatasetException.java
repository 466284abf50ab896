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

  /**
   * A case that lacks a field a template uses, at its file and line, in the words the API uses too ({@link
   * dev.tally.worker.eval.CaseFields#missingFieldDetail}): {@code case "b" has no field "meta.lang" ("meta"
   * has "language"), which --cmd uses}.
   *
   * @param file the dataset file
   * @param line the case's 1-based line
   * @param caseId the case's id
   * @param caseObject the case's JSON object
   * @param path the field path the case lacks
   * @param what the option whose template uses it ({@code --cmd}, {@code --prompt})
   * @return the exception, to throw
   */
  public static DatasetException missingField(Path file, int line, String caseId,
      com.fasterxml.jackson.databind.JsonNode caseObject, String path, String what) {
    return new DatasetException(file, line, dev.tally.worker.eval.CaseFields.missingFieldDetail(caseId, caseObject, path, what));
  }

  public Path file() {
    return file;
  }

  /** The 1-based line, or 0 when the problem is not on one line. */
  public int line() {
    return line;
  }
}
