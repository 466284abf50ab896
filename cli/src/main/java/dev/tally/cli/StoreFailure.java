package dev.tally.cli;

import java.nio.file.Path;

/**
 * The one line a run prints when its store fails (a full disk, most often): what SQLite or the file
 * system said, that nothing recorded is lost, and the command that finishes the run later. A store
 * failure is the machine's trouble, not a bug, so it gets this line instead of a stack trace.
 *
 * <p>Thread-safety: stateless.
 */
final class StoreFailure {
  /** What SQLite says when a write needs a page it cannot have ({@code SQLITE_FULL}). */
  static final String DISK_FULL = "database or disk is full";

  /** What the file system says when a write finds no room ({@code ENOSPC}), e.g. for a new file. */
  private static final String NO_SPACE = "No space left on device";

  private StoreFailure() {}

  /**
   * The line for a run (or, before a run is chosen, a start) stopped by a store failure.
   *
   * @param runId the run, or -1 if none was chosen yet
   * @param dbFile the store
   * @param resume the command that finishes the run
   * @param failure the store failure
   */
  static String stopped(long runId, Path dbFile, String resume, Throwable failure) {
    boolean full = isDiskFull(failure);
    return "tally: " + (runId >= 0 ? "run " + runId + " stopped" : "stopped") + ": the store " + dbFile + " failed: "
        + (full ? DISK_FULL : rootMessage(failure)) + ". Nothing recorded is lost; once "
        + (full ? "there is room on its disk" : "that is mended") + ", " + resume + " finishes "
        + (runId >= 0 ? "the run" : "it") + " without running a recorded case again.";
  }

  /** Whether the failure, or any of its causes, is a full disk (SQLite's {@code SQLITE_FULL} or {@code ENOSPC}). */
  static boolean isDiskFull(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String m = t.getMessage();
      if (m != null && (m.contains(DISK_FULL) || m.contains("SQLITE_FULL") || m.contains(NO_SPACE))) {
        return true;
      }
    }
    return false;
  }

  /** The innermost cause's message: what SQLite or the file system said. */
  static String rootMessage(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
  }
}
