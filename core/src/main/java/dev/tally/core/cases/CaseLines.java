package dev.tally.core.cases;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.CaseRecord;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The case grammar, read as a stream: JSON Lines, one case per line, each a JSON object with a unique,
 * non-empty string {@code id} and any other fields. The one owner of what a case line is: {@code tally run}
 * reads a dataset file with it and the HTTP API an uploaded body, and both say the same about a bad line.
 *
 * <h2>Grammar</h2>
 *
 * <ul>
 *   <li>Lines end in {@code \n}; a {@code \r} before it is dropped with the surrounding white space. A line
 *       may hold at most {@link #MAX_LINE_BYTES} bytes (before its {@code \n}) and must be UTF-8.
 *   <li>A UTF-8 byte-order mark at the very start is ignored; lines empty or only white space are skipped.
 *   <li>A case line is one JSON object (a repeated key, trailing text or an unpaired surrogate escape
 *       refuses it) with an {@code id} that is a non-empty string of at most {@link #MAX_ID_CHARS}
 *       characters, none of them a control or an invisible format character ({@link
 *       dev.tally.core.HiddenCharacters}: two ids that look alike are two different cases).
 *   <li>Ids are unique within a run. A stream cannot check that without remembering every id, so the store
 *       enforces it with its unique constraint as the cases are inserted ({@link
 *       CaseSourceException#duplicateId}); a caller that keeps every case anyway may ask this reader to
 *       check as it goes ({@link #rejectingDuplicateIds()}), to refuse before anything is opened.
 * </ul>
 *
 * <p>Cases are read one at a time ({@link #next()}), so memory holds one line, whatever the stream's size;
 * positions count from 0 in stream order. An NDJSON upload whose first line is something else (the run
 * object) reads that line first with {@link #header()}. Every error names the source and the line:
 * {@code "request body line 7: case has no \"id\" field"}.
 *
 * <p>Thread-safety: none; one reader is pulled by one thread. It does not close the stream.
 */
public final class CaseLines implements CaseSource {
  /** A line longer than this is refused: one case is a prompt or a test, not a data dump. */
  public static final int MAX_LINE_BYTES = 1 << 20;

  /**
   * The longest case id: ids name cases in results, logs and API paths ({@code /cases/{id}/attempts}), so
   * they are kept well under a URL's practical length; 1,024 leaves room for the longest test ids in use
   * (parametrized pytest node ids run to a few hundred characters).
   */
  public static final int MAX_ID_CHARS = 1_024;

  /** Bytes read from the stream at a time. */
  private static final int READ_CHUNK = 1 << 16;

  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  /**
   * Reads one line's JSON as strictly as a case line is read: one value, no repeated key, nothing after it
   * (for a line that is not a case, such as an NDJSON upload's header line).
   *
   * @throws com.fasterxml.jackson.core.JsonProcessingException if it is not such JSON (its message says where)
   */
  public static com.fasterxml.jackson.databind.JsonNode parseStrict(String text)
      throws com.fasterxml.jackson.core.JsonProcessingException {
    return JSON.readTree(text);
  }

  /**
   * One line as read.
   *
   * @param number its 1-based line number
   * @param text its text, without the line end and surrounding white space
   */
  public record Line(int number, String text) {}

  private final InputStream in;
  private final String name;
  private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPORT)
      .onUnmappableCharacter(CodingErrorAction.REPORT);
  private final byte[] chunk = new byte[READ_CHUNK];
  private int chunkLength;
  private int chunkIndex;
  private byte[] line = new byte[256];
  private int lineLength;
  private boolean eof;
  private int lineNumber;
  private int position;
  private boolean started;
  /** Positions from which line = position + offset, as (first position, offset) pairs: one per blank-line run. */
  private int[] segmentStarts = new int[4];
  private int[] segmentOffsets = new int[4];
  private int segments;
  /** The last position whose line is known; -1 before the first. */
  private int lastNoted = -1;
  /** Ids seen and their positions, when asked to check for repeats; else null. */
  private Map<String, Integer> seen;

  private CaseLines(InputStream in, String name) {
    this.in = Objects.requireNonNull(in, "in");
    this.name = Objects.requireNonNull(name, "name");
  }

  /**
   * A reader of the cases in {@code in}.
   *
   * @param in the stream, UTF-8 JSON Lines; read as far as the cases are pulled, never closed here
   * @param name what the stream is, for messages: a file name, {@code request body}
   */
  public static CaseLines of(InputStream in, String name) {
    return new CaseLines(in, name);
  }

  /**
   * Makes this reader refuse a repeated id itself (remembering every id, so for callers that keep every case
   * anyway). Call before the first {@link #next()}.
   *
   * @return this reader
   */
  public CaseLines rejectingDuplicateIds() {
    seen = new HashMap<>();
    return this;
  }

  /**
   * Reads the first line that is not blank as text, not as a case: for a stream whose first line is
   * something else (an NDJSON upload's run object). The cases are the lines after it, from position 0.
   *
   * @return the line, or empty if the stream has no line that is not blank
   * @throws CaseSourceException if the line is too long or not UTF-8, or the stream cannot be read
   * @throws IllegalStateException if a case or the header was already read
   */
  public Optional<Line> header() throws CaseSourceException {
    if (started) {
      throw new IllegalStateException("the header is the first line: read it before any case");
    }
    started = true;
    String text;
    while ((text = nextLine()) != null) {
      if (!text.isBlank()) {
        return Optional.of(new Line(lineNumber, text.strip()));
      }
    }
    return Optional.empty();
  }

  /**
   * The next case, or null at the end of the stream.
   *
   * @throws CaseSourceException naming this source and the line, if a line is longer than {@link
   *     #MAX_LINE_BYTES}, not UTF-8, not one JSON object, without a valid {@code id} (see the class doc), or
   *     (with {@link #rejectingDuplicateIds()}) repeats an earlier id; or if the stream cannot be read
   */
  @Override
  public CaseRecord next() throws CaseSourceException {
    started = true;
    String text;
    while ((text = nextLine()) != null) {
      if (text.isBlank()) {
        continue;
      }
      String caseId = parseId(text);
      int p = position;
      if (seen != null) {
        Integer first = seen.putIfAbsent(caseId, p);
        if (first != null) {
          noteLine(p);
          throw CaseSourceException.duplicateId(this, p, first, caseId);
        }
      }
      noteLine(p);
      position++;
      return new CaseRecord(p, caseId, text.strip());
    }
    return null;
  }

  /**
   * One JSON object of a line, for readers of formats whose records have no {@code id} yet (they make one,
   * then check it with {@link #idProblem}).
   *
   * @param line its 1-based line number
   * @param object the line's object
   * @param text the line's text as written, without the line end and surrounding white space
   */
  public record ObjectLine(int line, ObjectNode object, String text) {}

  /**
   * The next line's JSON object, checked by every rule of a case line except the one on {@code id}; or empty
   * at the end of the stream. For readers that map another format's records onto cases (an openai/evals
   * sample has no id). Do not mix with {@link #next()} on one reader: this one keeps no positions.
   *
   * @throws CaseSourceException naming this source and the line, if a line is longer than {@link
   *     #MAX_LINE_BYTES}, not UTF-8, not one JSON object, or holds an unpaired surrogate escape; or if the
   *     stream cannot be read
   */
  public Optional<ObjectLine> nextObject() throws CaseSourceException {
    started = true;
    String text;
    while ((text = nextLine()) != null) {
      if (!text.isBlank()) {
        return Optional.of(new ObjectLine(lineNumber, parseObject(text), text.strip()));
      }
    }
    return Optional.empty();
  }

  @Override
  public String name() {
    return name;
  }

  /** {@inheritDoc} Known for every case read so far. */
  @Override
  public int lineOf(int position) {
    if (position < 0 || position > lastNoted) {
      return 0;
    }
    int i = Arrays.binarySearch(segmentStarts, 0, segments, position);
    int segment = i >= 0 ? i : -i - 2;
    return position + segmentOffsets[segment];
  }

  /** How many cases were read. */
  public int count() {
    return position;
  }

  /** Remembers that the case at {@code p} is on the current line. */
  private void noteLine(int p) {
    lastNoted = p;
    int offset = lineNumber - p;
    if (segments > 0 && segmentOffsets[segments - 1] == offset) {
      return;
    }
    if (segments == segmentStarts.length) {
      segmentStarts = Arrays.copyOf(segmentStarts, segments * 2);
      segmentOffsets = Arrays.copyOf(segmentOffsets, segments * 2);
    }
    segmentStarts[segments] = p;
    segmentOffsets[segments] = offset;
    segments++;
  }

  /** The next line's text (line end not included), or null at the end of the stream. */
  private String nextLine() throws CaseSourceException {
    lineLength = 0;
    boolean any = false;
    while (true) {
      if (chunkIndex == chunkLength) {
        if (eof || !fill()) {
          if (!any) {
            return null;
          }
          break;
        }
      }
      any = true;
      int start = chunkIndex;
      int end = start;
      while (end < chunkLength && chunk[end] != '\n') {
        end++;
      }
      append(start, end);
      chunkIndex = end;
      if (end < chunkLength) { // the newline
        chunkIndex++;
        break;
      }
    }
    lineNumber++;
    String text;
    try {
      text = utf8.decode(ByteBuffer.wrap(line, 0, lineLength)).toString();
    } catch (CharacterCodingException e) {
      throw new CaseSourceException(name, lineNumber, "not valid UTF-8");
    }
    if (lineNumber == 1 && text.startsWith("\uFEFF")) {
      text = text.substring(1); // a byte-order mark some editors write: not part of the data
    }
    return text;
  }

  private boolean fill() throws CaseSourceException {
    try {
      int n;
      do {
        n = in.read(chunk, 0, chunk.length);
      } while (n == 0);
      if (n < 0) {
        eof = true;
        return false;
      }
      chunkLength = n;
      chunkIndex = 0;
      return true;
    } catch (IOException e) {
      throw new CaseSourceException(name, 0, CaseSourceException.cannotRead(e));
    }
  }

  private void append(int from, int to) throws CaseSourceException {
    int n = to - from;
    if (lineLength + n > MAX_LINE_BYTES) {
      throw new CaseSourceException(name, lineNumber + 1, "line is longer than the limit of " + MAX_LINE_BYTES + " bytes");
    }
    if (lineLength + n > line.length) {
      line = Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, Math.max(line.length * 2, lineLength + n)));
    }
    System.arraycopy(chunk, from, line, lineLength, n);
    lineLength += n;
  }

  /** Checks one case line and returns its id. */
  private String parseId(String text) throws CaseSourceException {
    JsonNode node = parseObject(text);
    Optional<String> problem = idProblem(node.get("id"));
    if (problem.isPresent()) {
      throw refuseLine(problem.get());
    }
    return node.get("id").textValue();
  }

  /** Checks that one line is a JSON object (strict, no unpaired surrogate) and returns it. */
  private ObjectNode parseObject(String text) throws CaseSourceException {
    JsonNode node;
    try {
      node = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      throw refuseLine("not valid JSON: " + dev.tally.core.JsonErrors.lineText(e));
    }
    if (node == null || !node.isObject()) {
      throw refuseLine("expected a JSON object, got "
          + (node == null ? "nothing" : node.getNodeType().name().toLowerCase(Locale.ROOT)));
    }
    String broken = loneSurrogate(node);
    if (broken != null) {
      // A surrogate escape with no partner (half of a pair): no UTF-8 can hold it, so it would be stored
      // changed, and two such ids could become one.
      throw refuseLine(broken + " holds an unpaired surrogate escape (half of a \\u pair), which is no character");
    }
    Optional<String> number = numberProblem(node);
    if (number.isPresent()) {
      throw refuseLine(number.get());
    }
    return (ObjectNode) node;
  }

  /**
   * What is wrong with a case's numbers, or empty: a number too large for a double (its magnitude above
   * about 1.8e308, which JSON's grammar allows) was read as infinity, and would reach an evaluator as {@code
   * Infinity}, or be stored as the string {@code "Infinity"}. Such a number is refused, naming its field, as
   * I-JSON advises against it (RFC 7493, section 2.2). An integer is kept exactly whatever its length. The
   * one number rule of every reader of cases (JSON Lines, the API's JSON body, the other formats' readers).
   *
   * @param caseObject a case as read (an object; any other value has no field to name)
   * @return the problem as a sentence without the place, or empty
   */
  public static Optional<String> numberProblem(JsonNode caseObject) {
    String path = nonFinite(caseObject, "");
    return path == null ? Optional.empty() : Optional.of("field \"" + path + "\" is a number beyond the range of a"
        + " double (about 1.8e308 either way), which Tally would change to infinity; write it as a string");
  }

  /** The path of the first number in {@code node} that was read as infinity (or NaN), or null. */
  private static String nonFinite(JsonNode node, String path) {
    if (node.isFloatingPointNumber()) {
      return Double.isFinite(node.doubleValue()) ? null : path;
    }
    if (node.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        String inner = nonFinite(e.getValue(), path.isEmpty() ? e.getKey() : path + "." + e.getKey());
        if (inner != null) {
          return inner;
        }
      }
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        String inner = nonFinite(node.get(i), path.isEmpty() ? Integer.toString(i) : path + "." + i);
        if (inner != null) {
          return inner;
        }
      }
    }
    return null;
  }

  /**
   * What is wrong with a case's {@code id} value, by the grammar's rule (a non-empty string of at most {@link
   * #MAX_ID_CHARS} characters, no character that does not show as itself: {@link
   * dev.tally.core.HiddenCharacters}), or empty if it is a valid id. The one statement of
   * the id rule: readers of other formats, which may make ids, ask it too.
   *
   * @param id the value of the case's {@code id} field, or null if it has none
   * @return the problem as a sentence without the place ({@code "case has no \"id\" field"}), or empty
   */
  public static Optional<String> idProblem(JsonNode id) {
    if (id == null) {
      return Optional.of("case has no \"id\" field");
    }
    if (!id.isTextual() || id.asText().isEmpty()) {
      return Optional.of("\"id\" must be a non-empty string, got " + id);
    }
    String caseId = id.asText();
    if (caseId.length() > MAX_ID_CHARS) {
      return Optional.of("\"id\" is " + caseId.length() + " characters long; the limit is " + MAX_ID_CHARS);
    }
    if (hasLoneSurrogate(caseId)) {
      return Optional.of("\"id\" holds an unpaired surrogate (half of a \\u pair), which is no character");
    }
    return dev.tally.core.HiddenCharacters.problem(caseId).map(p -> "\"id\" " + p);
  }

  /**
   * A case id as every message quotes it: a JSON string literal ({@code "a"}, {@code "say \"hi\""}), so that
   * an id holding a quote, an apostrophe or a backslash reads as one id and can be copied back into a
   * dataset or a query. Ids hold no control or hidden character ({@link #idProblem}), so nothing else is
   * escaped. The one quoting rule for a case id in a message, on the command line and over HTTP.
   *
   * @param caseId a case id
   * @return the id between double quotes, its quotes and backslashes escaped
   */
  public static String quotedId(String caseId) {
    return '"' + new String(com.fasterxml.jackson.core.io.JsonStringEncoder.getInstance().quoteAsString(caseId)) + '"';
  }

  private CaseSourceException refuseLine(String detail) {
    return new CaseSourceException(name, lineNumber, detail);
  }

  /** Where in {@code node} a string (field name or value) has an unpaired UTF-16 surrogate, or null. */
  private static String loneSurrogate(JsonNode node) {
    if (node.isTextual()) {
      return hasLoneSurrogate(node.textValue()) ? "a string of the case" : null;
    }
    for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
      if (hasLoneSurrogate(names.next())) {
        return "a field name of the case";
      }
    }
    for (JsonNode child : node) { // an object's values, an array's elements, nothing for a scalar
      String inner = loneSurrogate(child);
      if (inner != null) {
        return inner;
      }
    }
    return null;
  }

  private static boolean hasLoneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return true;
      }
    }
    return false;
  }
}
