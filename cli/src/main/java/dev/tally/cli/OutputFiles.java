package dev.tally.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * The files a command writes (results, summary, reports), checked against each other and against the files
 * it must not write over (the store and its companions, the dataset) before anything is opened: the one
 * rule that two options never name one file. Without it {@code --html tally.db} replaced the store, every run
 * in it, with a page; {@code --out cases.jsonl} the dataset with its results; {@code --out x --summary x}
 * kept only the summary.
 *
 * <p>Two names are one file when they resolve to the same path once links are followed (for a file not yet
 * there, its directory's real path and its name). Not thread-safe; one command fills and checks one.
 */
final class OutputFiles {
  /** The results file's name when {@code --out} is not given (tally run, resume, retry-errors, rescore, results). */
  static final String DEFAULT_RESULTS = "results.jsonl";
  /** The summary file's name when {@code --summary} is not given. */
  static final String DEFAULT_SUMMARY = "summary.json";
  /** The SQLite store's name when {@code --db} is not given (beside the dataset for tally run). */
  static final String DEFAULT_STORE = "tally.db";

  private final Map<String, Path> written = new LinkedHashMap<>();
  private final Map<String, Path> kept = new LinkedHashMap<>();

  /**
   * Adds a file the command writes, under the option that names it ({@code "--out"}); none if null.
   *
   * @return this
   */
  OutputFiles writes(String option, Path file) {
    if (file != null) {
      written.put(option, file);
    }
    return this;
  }

  /**
   * Adds a file the command must leave alone, and what it is ({@code "the dataset"}); none if null.
   *
   * @return this
   */
  OutputFiles keeps(String what, Path file) {
    if (file != null) {
      kept.put(what, file);
    }
    return this;
  }

  /**
   * Adds a SQLite store: the file, and the companions SQLite and Tally keep beside it (its write-ahead log,
   * shared memory and rollback journal; the coordinator's lock). None if {@code dbFile} is null (PostgreSQL).
   *
   * @return this
   */
  OutputFiles keepsStore(String option, Path dbFile) {
    if (dbFile != null) {
      keeps("the store (" + option + " " + dbFile + ")", dbFile);
      for (String suffix : List.of("-wal", "-shm", "-journal", "-lock")) {
        keeps("the store's " + suffix.substring(1) + " file (" + option + " " + dbFile + ")",
            dbFile.resolveSibling(dbFile.getFileName() + suffix));
      }
    }
    return this;
  }

  /**
   * Refuses, naming both, a written file that is another written one or a kept one.
   *
   * @throws ParameterException on the first such pair, in the order the files were added
   */
  void requireDistinct(CommandLine commandLine) {
    List<Map.Entry<String, Path>> seen = new ArrayList<>();
    for (Map.Entry<String, Path> w : written.entrySet()) {
      Path key = identity(w.getValue());
      for (Map.Entry<String, Path> k : kept.entrySet()) {
        if (key.equals(identity(k.getValue()))) {
          throw new ParameterException(commandLine, w.getKey() + " " + w.getValue() + " is " + k.getKey()
              + ", which it would overwrite; give another file");
        }
      }
      for (Map.Entry<String, Path> s : seen) {
        // Two streams into one sink (--out /dev/null --summary /dev/null) overwrite nothing.
        if (key.equals(identity(s.getValue())) && !isStream(w.getValue())) {
          throw new ParameterException(commandLine, s.getKey() + " " + s.getValue() + " and " + w.getKey() + " "
              + w.getValue() + " are the same file, and one would overwrite the other; give each its own");
        }
      }
      seen.add(w);
    }
  }

  /**
   * The file's one name: its real path, or for a file not yet there its directory's real path and its name.
   * Never normalized as text first: {@code link/..} is the parent of the link's target, not the directory the
   * link is in, and only the file system knows which ({@code toRealPath} follows each step in order).
   */
  private static Path identity(Path file) {
    Path absolute = file.toAbsolutePath();
    try {
      if (Files.exists(absolute)) {
        return absolute.toRealPath();
      }
      Path parent = absolute.getParent();
      return parent != null && Files.exists(parent) ? parent.toRealPath().resolve(absolute.getFileName()) : absolute;
    } catch (IOException e) {
      return absolute;
    }
  }

  /**
   * The files written before a failure, for its message: {@code " (written: a, b)"}, or empty if none.
   *
   * @param written the files, in the order they were written
   */
  static String writtenBefore(List<Path> written) {
    return written.isEmpty() ? ""
        : " (written: " + written.stream().map(Path::toString).collect(java.util.stream.Collectors.joining(", ")) + ")";
  }

  /** A device or a pipe ({@code /dev/null}, {@code /dev/stdout}): written into as a stream, never replaced. */
  private static boolean isStream(Path file) {
    return Files.exists(file) && !Files.isRegularFile(file) && !Files.isDirectory(file);
  }
}
