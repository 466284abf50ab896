package dev.tally.core.score;

import java.io.IOException;

/**
 * How a scorer spec's file option ({@code json:schema-file=PATH}) is read: passed in by whoever may do I/O
 * (the command line, a worker), so that this package does none. Read once, when the specs are parsed.
 */
@FunctionalInterface
public interface ScorerFiles {
  /** Refuses every file: for callers whose scorers take no file. */
  ScorerFiles NONE = path -> {
    throw new IOException("no file reader was given to read " + path);
  };

  /**
   * The whole text of a file, UTF-8.
   *
   * @param path the path as the user wrote it
   * @throws IOException if it cannot be read
   */
  String read(String path) throws IOException;
}
