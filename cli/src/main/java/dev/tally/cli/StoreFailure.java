package dev.tally.cli;

import java.io.IOException;
import java.nio.file.Files;
import dev.tally.store.StoreLocation;
import java.nio.file.Path;

/**
 * The one line a run prints when its store fails (a full disk, most often): the cause, that nothing
 * recorded is lost, and the command that finishes the run later. A store failure is the machine's
 * trouble, not a bug, so it gets this line instead of a stack trace.
 *
 * <p>A full disk is told by SQLite's words ({@code SQLITE_FULL}, "database or disk is full") anywhere in
 * the failure, or by the store's disk having less than {@link #LOW_SPACE_BYTES} free: after its first
 * {@code SQLITE_FULL} the store's later attempts fail with other words, and those are what the coordinator
 * gives up with.
 *
 * <p>Thread-safety: stateless.
 */
final class StoreFailure {
  /** What SQLite says when a write needs a page it cannot have ({@code SQLITE_FULL}). */
  static final String DISK_FULL = "database or disk is full";

  /**
   * Below this much free space the store's disk counts as full: one commit writes a WAL frame of 4 KiB per
   * page it changes and a checkpoint more, so a store with less than a mebibyte left fails within a few
   * commits of a busy run.
   */
  static final long LOW_SPACE_BYTES = 1 << 20;

  /** What the file system says when a write finds no room ({@code ENOSPC}), e.g. for a new file. */
  private static final String NO_SPACE = "No space left on device";

  private StoreFailure() {}

  /**
   * The line for a run (or, before a run is chosen, a start) stopped by a store failure.
   *
   * @param runId the run, or -1 if none was chosen yet
   * @param db the store
   * @param resume the command that finishes the run
   * @param failure the store failure
   */
  static String stopped(long runId, StoreLocation db, String resume, Throwable failure) {
    long free = usableSpace(db);
    boolean full = saysFull(failure) || (free >= 0 && free < LOW_SPACE_BYTES);
    String cause = full ? DISK_FULL + (free >= 0 ? " (its disk has " + free / 1024 + " KiB free)" : "") : rootMessage(failure);
    return "tally: " + (runId >= 0 ? "run " + runId + " stopped" : "stopped") + ": the store " + db.describe() + " failed: "
        + cause + ". Nothing recorded is lost; once " + (full ? "there is room on its disk" : "that is mended")
        + ", " + resume + " finishes " + (runId >= 0 ? "the run" : "it") + " without running a recorded case again.";
  }

  /** Whether the failure is a full disk: SQLite's or the file system's words for it, or a nearly full disk. */
  static boolean isDiskFull(Throwable failure, StoreLocation db) {
    long free = usableSpace(db);
    return saysFull(failure) || (free >= 0 && free < LOW_SPACE_BYTES);
  }

  /** Whether the failure, a cause or a suppressed exception of either says the disk is full. */
  private static boolean saysFull(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (mentionsFull(t)) {
        return true;
      }
      for (Throwable s : t.getSuppressed()) {
        if (mentionsFull(s)) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean mentionsFull(Throwable t) {
    String m = t.getMessage();
    return m != null && (m.contains(DISK_FULL) || m.contains("SQLITE_FULL") || m.contains(NO_SPACE));
  }

  /**
   * Bytes free for this process on the disk that holds the store, or -1 if that cannot be told (a
   * PostgreSQL store's disk is its server's).
   */
  private static long usableSpace(StoreLocation db) {
    if (!(db instanceof StoreLocation.SqliteFile f)) {
      return -1;
    }
    try {
      Path dir = f.file().toAbsolutePath().getParent();
      return dir == null ? -1 : Files.getFileStore(dir).getUsableSpace();
    } catch (IOException | SecurityException e) {
      return -1;
    }
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
