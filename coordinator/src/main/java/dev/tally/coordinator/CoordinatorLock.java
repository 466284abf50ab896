package dev.tally.coordinator;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * One coordinator per store: an exclusive operating-system lock on the file {@code STORE-lock} beside
 * the store, held while a coordinator works on it. A second coordinator on the same store would resume
 * the same unfinished run, take its leases from under the first one's workers (their results fenced,
 * their cases run twice) and wait for jobs the first one ends. The operating system releases the lock
 * when the process dies, {@code kill -9} included, so a crashed coordinator never blocks the next one.
 * The lock file itself stays (empty); SQLite's own locks are on other files.
 *
 * <p>{@link CoordinatorBuilder#storeFile} takes it before it opens the store, so every coordinator
 * started on a store file holds it; a caller that opens a store itself may take it with {@link
 * #tryAcquire}.
 *
 * <p>Thread-safety: acquire and close from one thread.
 */
public final class CoordinatorLock implements AutoCloseable {
  private final FileChannel channel;
  private final FileLock lock;

  private CoordinatorLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * The lock file of a store: {@code tally.db} has {@code tally.db-lock}, in the same directory. The store
   * is named by its real path, links followed ({@link #storeIdentity}), so that two names of one file (a
   * symbolic link, {@code ./x} and {@code x}) share one lock.
   */
  public static Path lockFile(Path dbFile) {
    Path db = storeIdentity(dbFile);
    return db.resolveSibling(db.getFileName() + "-lock");
  }

  /**
   * The one name of a store file: its real path when it exists (links followed), else the real path of
   * its directory (when that exists) with the file's name, else the normalized absolute path.
   */
  public static Path storeIdentity(Path dbFile) {
    Path absolute = dbFile.toAbsolutePath().normalize();
    try {
      if (Files.exists(absolute)) {
        return absolute.toRealPath();
      }
      Path parent = absolute.getParent();
      if (parent != null && Files.isDirectory(parent)) {
        return parent.toRealPath().resolve(absolute.getFileName());
      }
    } catch (java.io.IOException e) {
      // Unreadable links or a race with a deletion: the normalized path is the best name left.
    }
    return absolute;
  }

  /**
   * Takes the store's coordinator lock if no other coordinator holds it. Creates the store's directory
   * and the lock file if they are missing.
   *
   * @param dbFile the store file (it need not exist yet)
   * @return the held lock, or null if another coordinator (in any process, this one included) holds it
   * @throws IOException if the directory or the lock file cannot be created or opened, or the lock
   *     cannot be asked for
   */
  public static CoordinatorLock tryAcquire(Path dbFile) throws IOException {
    Path file = lockFile(dbFile);
    Path parent = file.getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    try {
      FileLock lock = channel.tryLock();
      if (lock == null) {
        channel.close();
        return null;
      }
      return new CoordinatorLock(channel, lock);
    } catch (OverlappingFileLockException heldInThisProcess) {
      channel.close();
      return null;
    } catch (IOException | RuntimeException e) {
      channel.close();
      throw e;
    }
  }

  /**
   * Releases the lock.
   *
   * @throws IOException if the operating system reports an error releasing it or closing the file
   */
  @Override
  public void close() throws IOException {
    try {
      lock.release();
    } finally {
      channel.close();
    }
  }
}
