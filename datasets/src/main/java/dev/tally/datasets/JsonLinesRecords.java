package dev.tally.datasets;

import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSourceException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;

/**
 * JSON Lines records, read by the case grammar's owner ({@link CaseLines#nextObject()}): line limit, UTF-8,
 * byte-order mark, blank lines and strict JSON are its rules; the id is checked later, once the record is a case.
 *
 * <p>Thread-safety: none.
 */
final class JsonLinesRecords implements RecordStream {
  private final InputStream in;
  private final CaseLines lines;

  JsonLinesRecords(InputStream in, String name) {
    this.in = new BufferedInputStream(in, 1 << 16);
    this.lines = CaseLines.of(this.in, name);
  }

  @Override
  public RawRecord next() throws CaseSourceException {
    Optional<CaseLines.ObjectLine> line = lines.nextObject();
    return line.map(l -> new RawRecord(l.line(), 0, l.object(), l.text())).orElse(null);
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
