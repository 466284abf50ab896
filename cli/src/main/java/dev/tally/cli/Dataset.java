package dev.tally.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import com.fasterxml.jackson.core.JsonParser;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A dataset in JSON Lines: one case per line, each a JSON object with a unique, non-empty string
 * {@code id} and any other fields. Lines that are empty or only white space are skipped; a UTF-8
 * byte-order mark at the start of the file is ignored; a line may end in {@code \r\n}.
 *
 * <p>Reading is all or nothing: the first bad line stops it with a {@link DatasetException} naming the
 * file and line, before anything is submitted.
 */
public final class Dataset {
  /** A case line longer than this is refused: one case is a prompt or a test, not a data dump. */
  public static final int MAX_LINE_BYTES = 1 << 20;

  private static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private final Path file;
  private final List<CaseRecord> cases;
  private final List<Integer> lines;

  private Dataset(Path file, List<CaseRecord> cases, List<Integer> lines) {
    this.file = file;
    this.cases = List.copyOf(cases);
    this.lines = List.copyOf(lines);
  }

  /**
   * Reads and checks a dataset.
   *
   * @param file a JSON Lines file, UTF-8
   * @return the cases in file order
   * @throws DatasetException if the file cannot be read or has no case, or a line is not UTF-8, is longer
   *     than {@link #MAX_LINE_BYTES}, is not one JSON object (a repeated key counts as not), has no
   *     non-empty string {@code id} free of control characters, or repeats an earlier {@code id}
   */
  public static Dataset read(Path file) throws DatasetException {
    List<CaseRecord> cases = new ArrayList<>();
    List<Integer> lines = new ArrayList<>();
    Map<String, Integer> seen = new HashMap<>();
    CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    // Lines are split as bytes and decoded one by one, so a bad byte is reported on its own line.
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      ByteArrayOutputStream line = new ByteArrayOutputStream();
      int lineNo = 0;
      boolean more = true;
      while (more) {
        line.reset();
        int b;
        while ((b = in.read()) != -1 && b != '\n') {
          if (line.size() >= MAX_LINE_BYTES) { // this byte would be one too many
            throw new DatasetException(file, lineNo + 1, "line is longer than the limit of " + MAX_LINE_BYTES + " bytes");
          }
          line.write(b);
        }
        more = b != -1;
        if (!more && line.size() == 0) {
          break;
        }
        lineNo++;
        String text;
        try {
          text = utf8.decode(ByteBuffer.wrap(line.toByteArray())).toString();
        } catch (CharacterCodingException e) {
          throw new DatasetException(file, lineNo, "not valid UTF-8");
        }
        if (lineNo == 1 && text.startsWith("\uFEFF")) {
          text = text.substring(1); // a byte-order mark some editors write: not part of the data
        }
        if (text.isBlank()) {
          continue;
        }
        cases.add(parseCase(file, lineNo, text, cases.size(), seen));
        lines.add(lineNo);
      }
    } catch (IOException e) {
      throw new DatasetException(file, 0, "cannot read: " + e.getMessage());
    }
    if (cases.isEmpty()) {
      throw new DatasetException(file, 0, "dataset has no cases");
    }
    return new Dataset(file, cases, lines);
  }

  private static CaseRecord parseCase(Path file, int lineNo, String text, int position, Map<String, Integer> seen)
      throws DatasetException {
    JsonNode node;
    try {
      node = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      throw new DatasetException(file, lineNo, "not valid JSON: " + e.getOriginalMessage());
    }
    if (node == null || !node.isObject()) {
      throw new DatasetException(file, lineNo, "expected a JSON object, got " + (node == null ? "nothing" : node.getNodeType().name().toLowerCase(Locale.ROOT)));
    }
    JsonNode id = node.get("id");
    if (id == null) {
      throw new DatasetException(file, lineNo, "case has no \"id\" field");
    }
    if (!id.isTextual() || id.asText().isEmpty()) {
      throw new DatasetException(file, lineNo, "\"id\" must be a non-empty string, got " + id);
    }
    String caseId = id.asText();
    if (caseId.chars().anyMatch(c -> c < 0x20 || c == 0x7F)) {
      throw new DatasetException(file, lineNo, "\"id\" " + id + " contains a control character");
    }
    String broken = loneSurrogate(node);
    if (broken != null) {
      // A surrogate escape with no partner (half of a pair): no UTF-8 can hold it, so it would be stored
      // changed, and two such ids could become one.
      throw new DatasetException(file, lineNo, broken + " holds an unpaired surrogate escape (half of a \\u pair),"
          + " which is no character");
    }
    Integer earlier = seen.putIfAbsent(caseId, lineNo);
    if (earlier != null) {
      throw new DatasetException(file, lineNo, "duplicate id \"" + caseId + "\" (first on line " + earlier + ")");
    }
    return new CaseRecord(position, caseId, text.strip());
  }

  /** Where in {@code node} a string (field name or value) has an unpaired UTF-16 surrogate, or null. */
  private static String loneSurrogate(JsonNode node) {
    if (node.isTextual()) {
      return hasLoneSurrogate(node.textValue()) ? "a string of the case" : null;
    }
    for (java.util.Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
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

  /**
   * Checks that every case has what {@code missingField} asks for (the fields an exec template uses, by
   * the template's own rule).
   *
   * @param missingField the first field a case lacks, or empty
   * @param what the option that needs the fields, for the message
   * @throws DatasetException naming the first case (and its line) that lacks one, and the field
   */
  public void requireFields(Function<JsonNode, Optional<String>> missingField, String what) throws DatasetException {
    for (int i = 0; i < cases.size(); i++) {
      JsonNode node;
      try {
        node = JSON.readTree(cases.get(i).caseJson());
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("case was valid JSON when read", e);
      }
      Optional<String> missing = missingField.apply(node);
      if (missing.isPresent()) {
        throw new DatasetException(file, lines.get(i), "case \"" + cases.get(i).caseId() + "\" has no field \""
            + missing.get() + "\", which " + what + " uses");
      }
    }
  }

  public Path file() {
    return file;
  }

  /**
   * A SHA-256 digest (hex) of the cases in order, ids and content: equal for two reads of the same
   * cases, different when any case was edited, added, removed or moved.
   */
  public String digest() {
    java.security.MessageDigest sha;
    try {
      sha = java.security.MessageDigest.getInstance("SHA-256");
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    for (CaseRecord c : cases) {
      for (String part : new String[] {c.caseId(), c.caseJson()}) {
        byte[] bytes = part.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        sha.update(java.nio.ByteBuffer.allocate(4).putInt(bytes.length).array()); // length-prefixed: no ambiguity
        sha.update(bytes);
      }
    }
    return java.util.HexFormat.of().formatHex(sha.digest());
  }

  /** The cases in file order. */
  public List<CaseRecord> cases() {
    return cases;
  }
}
