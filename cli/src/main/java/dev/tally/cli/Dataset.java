package dev.tally.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.datasets.DatasetReader;
import dev.tally.datasets.ReadOptions;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A dataset file, read whole for {@code tally run} (which needs its digest and its ids before it picks the
 * run). How a file of each format becomes cases, and what is refused, is the {@code datasets} module's
 * ({@link DatasetReader}, which keeps {@link CaseLines}' grammar); this class adds only what a dataset file
 * must also be: readable, with at least one case, and (since its cases are all in memory anyway) free of
 * repeated ids before anything is opened.
 *
 * <p>Reading is all or nothing: the first bad line stops it with a {@link DatasetException} naming the
 * file and line, before anything is submitted.
 */
public final class Dataset {
  /** The longest case line: {@link CaseLines#MAX_LINE_BYTES}. */
  public static final int MAX_LINE_BYTES = CaseLines.MAX_LINE_BYTES;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path file;
  private final List<CaseRecord> cases;
  private final List<Integer> lines;

  private Dataset(Path file, List<CaseRecord> cases, List<Integer> lines) {
    this.file = file;
    this.cases = List.copyOf(cases);
    this.lines = List.copyOf(lines);
  }

  /**
   * Reads and checks a dataset in a format detected from it, every case once.
   *
   * @see #read(Path, ReadOptions)
   */
  public static Dataset read(Path file) throws DatasetException {
    return read(file, ReadOptions.DEFAULT);
  }

  /**
   * Reads and checks a dataset.
   *
   * @param file a dataset file in any format {@link DatasetReader} reads
   * @param options its format (or detection), CSV types and the cases to take
   * @return the cases in dataset order
   * @throws DatasetException if the file cannot be read or has no case, if a record is refused by its
   *     format's reader, or if an id repeats an earlier one
   */
  public static Dataset read(Path file, ReadOptions options) throws DatasetException {
    List<CaseRecord> cases = new ArrayList<>();
    List<Integer> lines = new ArrayList<>();
    Map<String, Integer> seen = new HashMap<>();
    try (DatasetReader reader = DatasetReader.open(file, options)) {
      for (CaseRecord c; (c = reader.next()) != null; ) {
        Integer first = seen.putIfAbsent(c.caseId(), c.position());
        if (first != null) {
          throw CaseSourceException.duplicateId(reader, c.position(), first, c.caseId());
        }
        cases.add(c);
        lines.add(reader.lineOf(c.position()));
      }
    } catch (CaseSourceException e) {
      throw new DatasetException(file, e.line(), e.detail());
    } catch (IOException e) {
      throw new DatasetException(file, 0, "cannot read: " + e.getMessage());
    }
    if (cases.isEmpty()) {
      throw new DatasetException(file, 0, "dataset has no cases");
    }
    return new Dataset(file, cases, lines);
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
