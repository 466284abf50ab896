package dev.tally.store;

import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Scratch files named for the process that writes them, {@code PREFIX + pid + "-" + rest}, and the removal
 * of those a process left behind when it was killed outright ({@code kill -9}, a crash), the one rule for
 * it: a file is removed only once no process has its pid. Other processes sharing the directory (a
 * standby server beside its leader, two runs creating stores side by side) never lose a file they are
 * writing, which removing every file of the name at start did: a standby that started deleted its
 * leader's upload in the middle of it. A file whose pid has been taken by another process is left until
 * that one is gone too; nothing but such scratch files is ever touched.
 *
 * <p>Thread-safety: stateless.
 */
public final class ProcessFiles {
  private ProcessFiles() {}

  /** The start of this process's files of {@code prefix}: {@code prefix + pid + "-"}. */
  public static String ownPrefix(String prefix) {
    return prefix + ProcessHandle.current().pid() + "-";
  }

  /**
   * Removes the files in {@code directory} named {@code prefix + pid + "-" ...} whose pid is no living
   * process's. Files that cannot be read or removed are left (the next call tries again).
   *
   * @param directory where to look; nothing happens if it does not exist
   * @param prefix the start of the files' names, before the pid
   * @return how many files were removed
   */
  public static int removeLeftovers(Path directory, String prefix) {
    if (!Files.isDirectory(directory)) {
      return 0;
    }
    int removed = 0;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, globLiteral(prefix) + "*")) {
      for (Path file : files) {
        String rest = file.getFileName().toString().substring(prefix.length());
        int dash = rest.indexOf('-');
        long pid;
        try {
          pid = Long.parseLong(dash < 0 ? rest : rest.substring(0, dash));
        } catch (NumberFormatException e) {
          continue; // not named by this rule: not ours to remove
        }
        if (ProcessHandle.of(pid).isEmpty()) {
          try {
            if (Files.deleteIfExists(file)) {
              removed++;
            }
          } catch (IOException e) {
            // left for the next call
          }
        }
      }
    } catch (IOException | DirectoryIteratorException e) {
      // an unreadable directory: whoever writes there next fails and says why
    }
    return removed;
  }

  /** {@code text} as a glob that matches only itself. */
  private static String globLiteral(String text) {
    return text.replaceAll("([\\\\*?\\[\\]{}])", "\\\\$1");
  }
}
