package dev.tally.datasets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import dev.tally.core.cases.CaseSourceException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The rows of an RFC 4180 CSV file with a header row, streamed by Jackson's CSV parser: each row an object
 * whose fields are the header's columns in order, each cell a string unless {@link CsvTypes} types its
 * column. A row with more or fewer cells than the header is refused, as is a header that names a column
 * twice or lacks a typed column; empty lines are skipped; UTF-8, a byte-order mark ignored.
 *
 * <p>Thread-safety: none.
 */
final class CsvRecords implements RecordStream {
  private static final CsvMapper CSV = CsvMapper.builder()
      .enable(CsvParser.Feature.FAIL_ON_MISSING_COLUMNS)
      .enable(CsvParser.Feature.SKIP_EMPTY_LINES)
      .build();

  private final Reader reader;
  private final CsvParser parser;
  private final CsvTypes types;
  private final String name;
  private List<String> header;
  private int row;

  CsvRecords(InputStream in, String name, CsvTypes types) throws CaseSourceException {
    this.name = name;
    this.types = types;
    this.reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)), 1 << 16);
    try {
      skipByteOrderMark();
      this.parser = (CsvParser) CSV.getFactory().createParser(reader);
    } catch (IOException e) {
      throw new CaseSourceException(name, 0, CaseSourceException.cannotRead(e));
    }
    parser.setSchema(CsvSchema.emptySchema().withHeader());
  }

  private void skipByteOrderMark() throws IOException {
    reader.mark(1);
    if (reader.read() != '\uFEFF') {
      reader.reset();
    }
  }

  @Override
  public RawRecord next() throws CaseSourceException {
    int line = 0;
    int thisRow = row + 1;
    try {
      JsonToken token = parser.nextToken();
      if (token == null) {
        return null;
      }
      if (header == null) {
        readHeader();
      }
      row = thisRow;
      token = parser.nextToken();
      // The row's first cell is where the row starts (the object's own token is placed at the previous row).
      line = parser.currentTokenLocation().getLineNr();
      ObjectNode record = JsonNodeFactory.instance.objectNode();
      for (; token == JsonToken.FIELD_NAME; token = parser.nextToken()) {
        String column = parser.currentName();
        parser.nextToken();
        String cell = parser.getText();
        try {
          record.set(column, types.value(column, cell));
        } catch (IllegalArgumentException e) {
          throw new CaseSourceException(name, line, "row " + row + ": column \"" + column + "\": " + e.getMessage());
        }
      }
      return new RawRecord(line, row, record, null);
    } catch (CharacterCodingException e) {
      throw new CaseSourceException(name, Math.max(line, parser.currentLocation().getLineNr()), "not valid UTF-8");
    } catch (JsonProcessingException e) {
      if (header == null) {
        // Jackson's "Empty header line: can not bind data": an empty file, or one whose first line is blank.
        throw new CaseSourceException(name, 1, "no header row: a CSV dataset's first line names its columns"
            + " (" + dev.tally.core.JsonErrors.text(e) + ")");
      }
      // Once the row's first cell is read, the row is placed where it starts: a quote never closed is found
      // at the end of the file, past every line.
      int at = line > 0 || e.getLocation() == null ? line : e.getLocation().getLineNr();
      throw new CaseSourceException(name, at, "row " + thisRow + ": not valid CSV: " + dev.tally.core.JsonErrors.text(e));
    } catch (IOException e) {
      throw new CaseSourceException(name, line, CaseSourceException.cannotRead(e));
    }
  }

  private void readHeader() throws CaseSourceException {
    header = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (CsvSchema.Column c : parser.getSchema()) {
      if (!seen.add(c.getName())) {
        throw new CaseSourceException(name, 1, "the header names column \"" + c.getName() + "\" twice");
      }
      header.add(c.getName());
    }
    for (String typed : types.columns()) {
      if (!seen.contains(typed)) {
        throw new CaseSourceException(name, 1, "--csv-types names column \"" + typed + "\", which the header does not have;"
            + " its columns are " + String.join(", ", header));
      }
    }
  }

  @Override
  public void close() throws IOException {
    parser.close();
    reader.close();
  }
}
