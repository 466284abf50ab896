package dev.tally.coordinator.report;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.Store;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A run's results lines, in dataset order, as {@link RunReport} makes them (one JSON object per case:
 * {@code id}, {@code verdict}, {@code score}, ...), read once per report: the source every report beside
 * results.jsonl (CSV, JUnit, HTML) and {@code tally compare} are written from. Two sources give the same
 * lines: the store ({@link #of(Store, long)}), and a results file, whether {@code tally run} wrote it or
 * {@code tally results} downloaded it from a server ({@link #of(Path)}). Either streams: no source holds
 * more than one line at a time beyond what the store's own read holds.
 *
 * <p>Thread-safety: a source may be read from any one thread at a time; each {@link #forEach} reads anew.
 */
@FunctionalInterface
public interface ResultLines {
  /** What receives each line. */
  @FunctionalInterface
  interface Each {
    /**
     * Takes one results line (a JSON object).
     *
     * @throws IOException if what it writes to fails
     */
    void accept(JsonNode line) throws IOException;
  }

  /**
   * Gives every line, in order, to {@code each}.
   *
   * @throws IOException if the source cannot be read (naming it and the line), or {@code each} throws it
   * @throws dev.tally.core.store.StoreException if the source is a store and the store fails
   */
  void forEach(Each each) throws IOException;

  /** The lines of run {@code runId} in {@code store}, made by {@link RunReport#forEachResult}. */
  static ResultLines of(Store store, long runId) {
    return each -> RunReport.forEachResult(store, runId, each);
  }

  /**
   * The lines of a results file ({@code results.jsonl}: one JSON object per line; blank lines are
   * skipped).
   *
   * @throws IOException from {@link #forEach}, if the file cannot be read, or a line is not a JSON object:
   *     the message names the file and the line's number
   */
  static ResultLines of(Path resultsFile) {
    ObjectMapper json = new ObjectMapper().disable(JsonParser.Feature.AUTO_CLOSE_SOURCE);
    return each -> {
      try (BufferedReader reader = Files.newBufferedReader(resultsFile, StandardCharsets.UTF_8)) {
        String text;
        long lineNumber = 0;
        while ((text = reader.readLine()) != null) {
          lineNumber++;
          if (text.isBlank()) {
            continue;
          }
          JsonNode line;
          try {
            line = json.readTree(text);
          } catch (JsonProcessingException e) {
            throw new IOException(resultsFile + " line " + lineNumber + ": not JSON: " + dev.tally.core.JsonErrors.lineText(e), e);
          }
          if (line == null || !line.isObject() || !line.path("id").isTextual()) {
            throw new IOException(resultsFile + " line " + lineNumber + ": not a results line (a JSON object with a string id)");
          }
          each.accept(line);
        }
      }
    };
  }
}
