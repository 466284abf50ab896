package dev.tally.coordinator.report;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes a file so that a reader sees the old file or the whole new one, never half of one, and that once
 * {@link #write} returns the new one is on disk: the bytes go to a sibling temporary file (created with the
 * umask's permissions, not {@code createTempFile}'s private ones), which is forced to disk, renamed over
 * the target (atomically where the file system can), and the directory entry forced too. The one owner of
 * this rule for results, summaries, downloads and the client's state files. A target that is a link is
 * written through (the file it names is replaced; the link stays); one that exists and is not a regular
 * file (a device, a pipe: {@code --out /dev/stdout}) is a stream, written straight into, never replaced.
 *
 * <p>Thread-safety: stateless; two writers of one target in one process must not overlap (the temporary
 * file is named by process, not by thread).
 */
public final class AtomicFile {
  private AtomicFile() {}

  /** What fills the temporary file, given its path (it does not exist yet). */
  @FunctionalInterface
  public interface Filler {
    void fill(Path temp) throws IOException;
  }

  /**
   * Writes {@code target} through {@code filler}.
   *
   * @param target the file to replace or create (or the link to it, or a device or pipe to write into); its
   *     directory must exist
   * @param filler writes the whole content to the path it is given
   * @throws IOException if the content cannot be written, forced or moved into place (the temporary file
   *     is deleted and {@code target} is left as it was), its message naming {@code target} ({@code "cannot
   *     write results.jsonl (No space left on device)"}); or whatever else {@code filler} throws, as it is
   */
  public static void write(Path target, Filler filler) throws IOException {
    try {
      replace(target, filler);
    } catch (IOException e) {
      boolean fileSystems = e.getClass() == IOException.class || e instanceof java.nio.file.FileSystemException;
      boolean saidAlready = e.getMessage() != null && e.getMessage().startsWith(CANNOT_WRITE);
      if (!fileSystems || saidAlready) {
        throw e; // a filler's own kind of failure (a download's answer), or a nested write's
      }
      // A full disk says only "No space left on device", or names the temporary file: say which file.
      String reason = e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
          : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
      throw new IOException(CANNOT_WRITE + target + " (" + reason + ")", e);
    }
  }

  private static final String CANNOT_WRITE = "cannot write ";

  private static void replace(Path target, Filler filler) throws IOException {
    Path absolute = target.toAbsolutePath();
    if (Files.exists(absolute)) {
      // Write through a link to the file it names, never over the link itself.
      absolute = absolute.toRealPath();
      if (!Files.isRegularFile(absolute)) {
        // A device, a pipe, a terminal (--out /dev/stdout, --summary /dev/null): a stream, not a file to
        // replace. Renaming over it would put a regular file in its place (as root, even in /dev).
        Path stream = absolute;
        Path temp = Files.createTempFile("tally-", ".stream");
        try {
          Files.delete(temp);
          filler.fill(temp);
          try (var out = Files.newOutputStream(stream, StandardOpenOption.WRITE)) {
            Files.copy(temp, out);
          }
        } finally {
          Files.deleteIfExists(temp);
        }
        return;
      }
    }
    Path temp = absolute.resolveSibling("." + absolute.getFileName() + "." + ProcessHandle.current().pid() + TEMP_SUFFIX);
    try {
      Files.deleteIfExists(temp);
      filler.fill(temp);
      try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      try {
        Files.move(temp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, absolute, StandardCopyOption.REPLACE_EXISTING);
      }
      forceDirectory(absolute.getParent());
      removeLeftovers(absolute);
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  /**
   * Deletes the temporary files of {@code target} that processes no longer running left (killed with {@code
   * kill -9} midway: {@code .results.jsonl.20625.tmp}); one of a live process is its own, being written. A pid
   * reused since by another process keeps its file until a later write. Best effort: never throws.
   */
  private static void removeLeftovers(Path target) {
    String prefix = "." + target.getFileName() + ".";
    try (var siblings = Files.newDirectoryStream(target.getParent(), p -> {
      String name = p.getFileName().toString();
      return name.startsWith(prefix) && name.endsWith(TEMP_SUFFIX) && name.length() > prefix.length() + TEMP_SUFFIX.length();
    })) {
      for (Path leftover : siblings) {
        String name = leftover.getFileName().toString();
        String pid = name.substring(prefix.length(), name.length() - TEMP_SUFFIX.length());
        if (pid.chars().allMatch(c -> c >= '0' && c <= '9') && pid.length() <= 18
            && ProcessHandle.of(Long.parseLong(pid)).isEmpty()) {
          Files.deleteIfExists(leftover);
        }
      }
    } catch (IOException | RuntimeException e) {
      // a directory that cannot be listed, a file gone meanwhile: the write itself succeeded
    }
  }

  private static final String TEMP_SUFFIX = ".tmp";

  /**
   * Writes {@code bytes} to {@code target} as {@link #write(Path, Filler)} does.
   *
   * @throws IOException as {@link #write(Path, Filler)}
   */
  public static void write(Path target, byte[] bytes) throws IOException {
    write(target, temp -> Files.write(temp, bytes));
  }

  /**
   * Makes a rename or a delete in {@code directory} durable (the entry is data of the directory); where a
   * directory cannot be opened, as durable as the platform makes it. Never throws.
   */
  public static void forceDirectory(Path directory) {
    try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
      dir.force(true);
    } catch (IOException | UnsupportedOperationException e) {
      // some platforms cannot open a directory for reading
    }
  }
}
