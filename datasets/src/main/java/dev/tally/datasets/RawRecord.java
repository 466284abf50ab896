package dev.tally.datasets;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One record of a file before it is a case.
 *
 * @param line the 1-based line it starts on (0 if unknown)
 * @param row its 1-based row among the data rows of a CSV file (0 for other syntaxes), for messages
 * @param object the record
 * @param text the record's text as written, when it is one JSON Lines line (kept so that a case read as it
 *     is stays byte for byte what the file says); else null
 */
record RawRecord(int line, int row, ObjectNode object, String text) {

  /** Where the record is, as the start of a detail: {@code "row 3: "} for a CSV row, else nothing. */
  String rowPrefix() {
    return row > 0 ? "row " + row + ": " : "";
  }
}
