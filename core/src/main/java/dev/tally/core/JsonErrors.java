package dev.tally.core;

import com.fasterxml.jackson.core.JsonProcessingException;

/**
 * A JSON parser's complaint in words for people, the one wording for every reader of JSON input in Tally
 * (datasets, the API's bodies, scorer options, answers, results files). Jackson's own message names its
 * internals (the feature that would allow a token, the class a value was bound as, the constraint's
 * accessor, a redacted source); these are left out, and what is wrong and where stays. The place (file and
 * line, body line) is the caller's to add.
 *
 * <p>Thread-safety: stateless.
 */
public final class JsonErrors {
  private JsonErrors() {}

  /**
   * {@code e}'s message without the parser's internals: {@code Non-standard token 'NaN': enable
   * `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow} becomes {@code Non-standard token 'NaN'}, a
   * {@code start marker at [Source: REDACTED ...; line: 1, column: 1]} becomes {@code opened at line 1,
   * column 1}, a second value after the first says so.
   *
   * @param e what the parser threw
   * @return its complaint in words, without a place of its own (the caller names the file and line)
   */
  public static String text(JsonProcessingException e) {
    String m = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage();
    if (m.startsWith("Trailing token")) {
      return "a second JSON value follows the first (one value is expected)";
    }
    m = m.replaceAll("\\[Source: [^;\\]]*(\\([^)]*\\))?[^;\\]]*; line: (\\d+), column: (\\d+)\\]", "line $2, column $3");
    m = m.replace("start marker at line", "opened at line");
    m = m.replaceAll(": enable `[^`]*` to allow", "");
    // "maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)"
    m = m.replaceAll(" \\(not recognized as one since Feature '[^']*' not enabled for parser\\)", "");
    m = m.replace("maybe a (non-standard) comment?", "a comment? JSON has none");
    m = m.replaceAll(", from `[^`]*`", "");
    m = m.replaceAll(" \\(bound as `[^`]*`\\)", "");
    m = m.replaceAll("`[A-Za-z0-9_.$]+\\.[A-Z][A-Za-z0-9_$]*(\\.[A-Za-z0-9_$]+)*(\\(\\))?`", "a parser setting");
    // jackson-dataformat-yaml names SnakeYAML's event where a field name was due: a key that is a list or a map
    m = m.replaceAll("Expected a field name \\(Scalar value in YAML\\), got this instead: <[^>]*SequenceStartEvent[^>]*>",
        "a key must be plain text, got a list");
    m = m.replaceAll("Expected a field name \\(Scalar value in YAML\\), got this instead: <[^>]*MappingStartEvent[^>]*>",
        "a key must be plain text, got a map");
    m = m.replaceAll("<org\\.yaml\\.snakeyaml\\.events\\.([A-Za-z]+)Event\\([^>]*\\)>", "a YAML $1");
    return m.strip();
  }

  /**
   * As {@link #text}, for a parser given one line of a JSON Lines file or body: every position it names is in
   * that line, so only its column is said ({@code opened at column 1}). Its line 1 would read as the file's
   * first line, which the caller's own place ({@code cases.jsonl:2:}) contradicts.
   *
   * @param e what the parser threw on the line
   * @return its complaint in words, each position a column of the line
   */
  public static String lineText(JsonProcessingException e) {
    return text(e).replaceAll("\\bline \\d+, column (\\d+)", "column $1");
  }
}
