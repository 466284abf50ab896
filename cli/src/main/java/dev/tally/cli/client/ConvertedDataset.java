package dev.tally.cli.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.cli.DatasetException;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.datasets.DatasetReader;
import dev.tally.datasets.ReadOptions;
import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.Function;

/**
 * A dataset of any format {@link DatasetReader} reads, written as the JSON Lines the API takes, to a private
 * temporary file that {@link DatasetUpload} then checks and streams: the body stays NDJSON whatever the
 * dataset's format, and the server reads it with the same case grammar. Each case line is what the reader
 * made (a JSON Lines case with an id keeps its text), so the same file and options always give the same bytes,
 * and so the same submission identity.
 *
 * <p>Errors name the dataset file and its line (or row), never the temporary file: the exec template's
 * fields are checked here, case by case, and the server's refusal of a body line is mapped back with {@link
 * #datasetLine}.
 *
 * <p>Thread-safety: none; one per submission. {@link #close()} deletes the temporary file.
 */
public final class ConvertedDataset implements Closeable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path jsonLines;
  private final int[] lines;

  private ConvertedDataset(Path jsonLines, int[] lines) {
    this.jsonLines = jsonLines;
    this.lines = lines;
  }

  /**
   * Reads a dataset and writes its cases as JSON Lines.
   *
   * @param file the dataset
   * @param options its format and the cases to take
   * @param missingField the first field a case lacks that the evaluator needs (the exec template's rule), or empty
   * @param what the option that needs the fields, for the message ({@code --cmd})
   * @throws DatasetException naming the dataset file and line: a record its reader refuses, a case without a
   *     field the template uses, or no case at all
   * @throws IOException if the temporary file cannot be written
   */
  public static ConvertedDataset of(Path file, ReadOptions options, Function<JsonNode, Optional<String>> missingField, String what)
      throws DatasetException, IOException {
    Path out = Files.createTempFile("tally-submit-", ".jsonl"); // owner-only on POSIX: a dataset may be private
    boolean done = false;
    try (DatasetReader reader = DatasetReader.open(file, options);
        BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
      int[] lines = new int[64];
      int n = 0;
      for (CaseRecord c; (c = reader.next()) != null; ) {
        JsonNode caseObject = parse(c);
        Optional<String> missing = missingField.apply(caseObject);
        if (missing.isPresent()) {
          throw DatasetException.missingField(file, reader.lineOf(c.position()), c.caseId(), caseObject, missing.get(), what);
        }
        w.write(c.caseJson());
        w.write('\n');
        if (n == lines.length) {
          lines = Arrays.copyOf(lines, n * 2);
        }
        lines[n++] = reader.lineOf(c.position());
      }
      if (n == 0) {
        throw new DatasetException(file, 0, "dataset has no cases");
      }
      done = true;
      return new ConvertedDataset(out, Arrays.copyOf(lines, n));
    } catch (CaseSourceException e) {
      throw new DatasetException(file, e.line(), e.detail());
    } finally {
      if (!done) {
        Files.deleteIfExists(out);
      }
    }
  }

  private static JsonNode parse(CaseRecord c) {
    try {
      return JSON.readTree(c.caseJson());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a case the reader made is JSON", e);
    }
  }

  /** The JSON Lines file, one case per line, in dataset order. */
  public Path jsonLines() {
    return jsonLines;
  }

  /**
   * The dataset's line of a line of the request body (line 1 is the run's fields; line {@code N + 1} is case
   * {@code N}), or 0 for line 1, a line past the cases, or a case whose place is not known.
   */
  public long datasetLine(long bodyLine) {
    long caseIndex = bodyLine - 2;
    return caseIndex >= 0 && caseIndex < lines.length ? lines[(int) caseIndex] : 0;
  }

  @Override
  public void close() throws IOException {
    Files.deleteIfExists(jsonLines);
  }
}
