package dev.tally.core.cases;

/**
 * A case that cannot be submitted, or a source that cannot be read: the message names the source and,
 * where there is one, the line ({@code "cases.jsonl line 7: duplicate id \"a\" (first on line 2)"}). Nothing
 * of a run whose source throws this is written.
 *
 * <p>Thread-safety: immutable.
 */
public class CaseSourceException extends Exception {
  private final String source;
  private final int line;
  private final String detail;

  /**
   * @param source what the cases come from, in words ({@code cases.jsonl}, {@code request body})
   * @param line the 1-based line, or 0 when the problem is not on one line (or the source has none)
   * @param detail what is wrong, as a sentence without the place
   */
  public CaseSourceException(String source, int line, String detail) {
    super(source + (line > 0 ? " line " + line : "") + ": " + detail);
    this.source = source;
    this.line = line;
    this.detail = detail;
  }

  /**
   * The refusal of the case at {@code position} of {@code source} because its id repeats the case at
   * {@code firstPosition}: the wording of the rule "a run's case ids are unique", for whoever finds the
   * repeat (a reader that remembers ids, or a store's unique constraint).
   */
  /**
   * Why a source cannot be read, as a detail: {@code "cannot read: no such file"}, {@code "permission
   * denied"}, the operating system's reason ({@code "Is a directory"}), else the exception's message. The one
   * wording for every dataset reader: a {@code NoSuchFileException}'s own message is only the path, which
   * the error names already.
   */
  public static String cannotRead(java.io.IOException e) {
    String why;
    if (e instanceof java.nio.file.NoSuchFileException) {
      why = "no such file";
    } else if (e instanceof java.nio.file.AccessDeniedException) {
      why = "permission denied";
    } else if (e instanceof java.nio.file.FileSystemException f && f.getReason() != null) {
      why = f.getReason();
    } else {
      why = e.getMessage();
    }
    return "cannot read: " + why;
  }

  public static CaseSourceException duplicateId(CaseSource source, int position, int firstPosition, String caseId) {
    int firstLine = source.lineOf(firstPosition);
    return source.refuse(position, "duplicate id " + CaseLines.quotedId(caseId) + " ("
        + (firstLine > 0 ? FIRST_ON_LINE + firstLine : "first at case " + (firstPosition + 1)) + ")");
  }

  /** How a duplicate id's detail names the line of the id's first case: {@code (first on line 2)}, at its end. */
  private static final String FIRST_ON_LINE = "first on line ";
  private static final java.util.regex.Pattern FIRST_LINE_AT_END =
      java.util.regex.Pattern.compile("\\(" + FIRST_ON_LINE + "(\\d+)\\)$");

  /**
   * A detail of this class with the first line a duplicate id's names ({@code (first on line 2)}, at the
   * end) written as {@code place} says: for a reader whose lines are numbered otherwise than the source's
   * (the API's body, a client's dataset). Only that place is touched, never the id quoted before it, which
   * may hold any text.
   *
   * @param detail a {@link #detail()}, or a message that ends with one
   * @param place the words for a line of the source, such as {@code "line 1"} or {@code "/cases/0"}; null to
   *     leave that line as it is
   * @return the detail with that place rewritten, or as it was if it names none
   */
  public static String withFirstLine(String detail, java.util.function.LongFunction<String> place) {
    java.util.regex.Matcher m = FIRST_LINE_AT_END.matcher(detail);
    if (!m.find()) {
      return detail;
    }
    String written = place.apply(Long.parseLong(m.group(1)));
    return written == null ? detail : detail.substring(0, m.start()) + "(first on " + written + ")";
  }

  /** What the cases come from, in words. */
  public String source() {
    return source;
  }

  /** The 1-based line, or 0 when the problem is not on one line. */
  public int line() {
    return line;
  }

  /** What is wrong, without the place. */
  public String detail() {
    return detail;
  }
}
