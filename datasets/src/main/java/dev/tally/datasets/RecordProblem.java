package dev.tally.datasets;

/**
 * What is wrong with one record, and in which field: the reader adds the file and line (or row) to make the
 * {@link dev.tally.core.cases.CaseSourceException}.
 *
 * <p>Thread-safety: immutable.
 */
final class RecordProblem extends Exception {
  private final String field;

  /**
   * @param field the field (or CSV column) at fault, or null if the record as a whole is
   * @param detail what is wrong, as a sentence without the place
   */
  RecordProblem(String field, String detail) {
    super(detail, null, false, false);
    this.field = field;
  }

  /** The problem as the end of a message: {@code field "ideal": must be ...}. */
  String describe() {
    return field == null ? getMessage() : "field \"" + field + "\": " + getMessage();
  }
}
