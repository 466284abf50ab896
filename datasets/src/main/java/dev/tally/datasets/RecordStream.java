package dev.tally.datasets;

import dev.tally.core.cases.CaseSourceException;
import java.io.Closeable;

/**
 * Records cut out of one file by its syntax, in file order.
 *
 * <p>Thread-safety: none; pulled by one thread.
 */
interface RecordStream extends Closeable {
  /**
   * The next record, or null at the end.
   *
   * @throws CaseSourceException naming the file and line if the syntax is broken there or the file cannot be read
   */
  RawRecord next() throws CaseSourceException;
}
