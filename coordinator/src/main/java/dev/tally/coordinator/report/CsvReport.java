package dev.tally.coordinator.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.SequenceWriter;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A run's results as CSV ({@code tally run --csv}, {@code tally results --csv}): a header row, then one row
 * per case in dataset order, with the results line's fields {@link #COLUMNS} (RFC 4180, through Jackson's
 * CSV module: fields quoted when they hold a comma, a quote or a line break; rows end in CRLF). A missing
 * or null field is an empty cell; a string is its text, a number its JSON text, an object or a list its JSON.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class CsvReport {
  /**
   * The columns, in order: each a field of the results line ({@link RunReport}). A field the results line
   * gains shows in the CSV by adding its name here.
   */
  public static final List<String> COLUMNS = List.of("id", "verdict", "score", "attempts", "worker", "durationMillis", "answer",
      "exitCode", "output", "stderr", "fields", "failure");

  // One flush at the end, not one per row: a 100k-case file is written in buffered blocks.
  private static final CsvMapper CSV = (CsvMapper) new CsvMapper().disable(com.fasterxml.jackson.databind.SerializationFeature.FLUSH_AFTER_WRITE_VALUE);

  private CsvReport() {}

  /**
   * Writes {@code lines} as CSV to {@code out}, atomically ({@link AtomicFile}).
   *
   * @throws IOException if the lines cannot be read or the file cannot be written
   * @throws dev.tally.core.store.StoreException if the lines come from a store that fails
   */
  public static void write(ResultLines lines, Path out) throws IOException {
    CsvSchema.Builder schema = CsvSchema.builder().setUseHeader(true).setLineSeparator("\r\n");
    COLUMNS.forEach(schema::addColumn);
    AtomicFile.write(out, temp -> {
      try (Writer w = Files.newBufferedWriter(temp, StandardCharsets.UTF_8);
          SequenceWriter rows = CSV.writer(schema.build()).writeValues(w)) {
        lines.forEach(line -> rows.write(row(line)));
      }
    });
  }

  private static List<String> row(JsonNode line) {
    List<String> row = new ArrayList<>(COLUMNS.size());
    for (String column : COLUMNS) {
      row.add(cell(line.get(column)));
    }
    return row;
  }

  /** A field's text in a cell. */
  static String cell(JsonNode value) {
    if (value == null || value.isNull() || value.isMissingNode()) {
      return "";
    }
    return value.isValueNode() ? value.asText() : value.toString();
  }
}
