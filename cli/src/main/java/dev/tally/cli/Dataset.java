package dev.tally.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A dataset in JSON Lines: one case per line, each a JSON object with a unique, non-empty string
 * {@code id} and any other fields. Lines that are empty or only white space are skipped.
 *
 * <p>Reading is all or nothing: the first bad line stops it with a {@link DatasetException} naming the
 * file and line, before anything is submitted.
 */
public final class Dataset {
  /** A case line longer than this is refused: one case is a prompt or a test, not a data dump. */
  public static final int MAX_LINE_CHARS = 1 << 20;

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

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
   * @throws DatasetException if the file cannot be read, is empty, or a line is not a JSON object, has no
   *     string {@code id}, repeats an earlier {@code id}, or is longer than {@link #MAX_LINE_CHARS}
   */
  public static Dataset read(Path file) throws DatasetException {
    List<CaseRecord> cases = new ArrayList<>();
    List<Integer> lines = new ArrayList<>();
    Map<String, Integer> seen = new HashMap<>();
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String text;
      int lineNo = 0;
      while ((text = in.readLine()) != null) {
        lineNo++;
        if (text.isBlank()) {
          continue;
        }
        if (text.length() > MAX_LINE_CHARS) {
          throw new DatasetException(file, lineNo, "line is " + text.length() + " characters, over the limit of " + MAX_LINE_CHARS);
        }
        JsonNode node;
        try {
          node = JSON.readTree(text);
        } catch (JsonProcessingException e) {
          throw new DatasetException(file, lineNo, "not valid JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) {
          throw new DatasetException(file, lineNo, "expected a JSON object, got " + (node == null ? "nothing" : node.getNodeType().name().toLowerCase()));
        }
        JsonNode id = node.get("id");
        if (id == null) {
          throw new DatasetException(file, lineNo, "case has no \"id\" field");
        }
        if (!id.isTextual() || id.asText().isEmpty()) {
          throw new DatasetException(file, lineNo, "\"id\" must be a non-empty string, got " + id);
        }
        Integer earlier = seen.putIfAbsent(id.asText(), lineNo);
        if (earlier != null) {
          throw new DatasetException(file, lineNo, "duplicate id \"" + id.asText() + "\" (first on line " + earlier + ")");
        }
        cases.add(new CaseRecord(cases.size(), id.asText(), text.strip()));
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

  /**
   * Checks that every case has every field in {@code fields} (the placeholders of an exec template).
   *
   * @throws DatasetException naming the first case (and its line) that lacks one
   */
  public void requireFields(Set<String> fields, String what) throws DatasetException {
    if (fields.isEmpty()) {
      return;
    }
    for (int i = 0; i < cases.size(); i++) {
      JsonNode node;
      try {
        node = JSON.readTree(cases.get(i).caseJson());
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("case was valid JSON when read", e);
      }
      for (String field : fields) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
          throw new DatasetException(file, lines.get(i), "case \"" + cases.get(i).caseId() + "\" has no field \"" + field + "\", which " + what + " uses");
        }
        if (value.isContainerNode()) {
          throw new DatasetException(file, lines.get(i), "field \"" + field + "\" of case \"" + cases.get(i).caseId() + "\" is an " + value.getNodeType().name().toLowerCase() + "; " + what + " can only insert a string, number or boolean");
        }
      }
    }
  }

  public Path file() {
    return file;
  }

  /** The cases in file order. */
  public List<CaseRecord> cases() {
    return cases;
  }
}
