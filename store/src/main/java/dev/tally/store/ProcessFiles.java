package dev.tally.store;

import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Scratch files named for the process that writes them, {@code PREFIX + pid + "-" + start + "-" + rest}
 * (its pid and its start time in epoch milliseconds), and the removal of those a process left behind when
 * it was killed outright ({@code kill -9}, a crash), the one rule for it: a file is removed only once no
 * process has that pid and start time. Other processes sharing the directory (a standby server beside its
 * leader, two runs creating stores side by side) never lose a file they are writing, which removing every
 * file of the name at start did: a standby that started deleted its leader's upload in the middle of it.
 * The start time tells a pid taken again apart (a container's server is pid 1 at every start). Files named
 * before the start time was part of the name ({@code PREFIX + pid + "-" + rest}) are removed once their pid
 * is gone, and those named before the pid was ({@code PREFIX + digits + suffix}) at once, as they were then.
 * Processes in other pid namespaces sharing the directory (containers sharing a volume) cannot be seen, and
 * must not share it. Nothing but such scratch files is ever touched.
 *
 * <p>Thread-safety: stateless.
 */
public final class ProcessFiles {
  private ProcessFiles() {}

  /** The start of this process's files of {@code prefix}: {@code prefix + pid + "-" + start + "-"}. */
  public static String ownPrefix(String prefix) {
    ProcessHandle self = ProcessHandle.current();
    return prefix + self.pid() + "-" + startMillis(self) + "-";
  }

  /** When {@code process} started, epoch ms, or 0 where the system does not say. */
  private static long startMillis(ProcessHandle process) {
    return process.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
  }

  /** Whether the process that named a file {@code pid}, started at {@code startMillis} (absent: unknown), lives. */
  private static boolean lives(long pid, java.util.OptionalLong startMillis) {
    java.util.Optional<ProcessHandle> process = ProcessHandle.of(pid);
    if (process.isEmpty()) {
      return false;
    }
    long started = startMillis(process.get());
    return startMillis.isEmpty() || started == 0 || startMillis.getAsLong() == 0 || started == startMillis.getAsLong();
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
        String[] parts = file.getFileName().toString().substring(prefix.length()).split("-", 3);
        boolean gone;
        try {
          if (parts.length == 1) {
            gone = parts[0].matches("\\d+(\\.[A-Za-z0-9]+)?"); // named before the pid was part of the name
          } else {
            long pid = Long.parseLong(parts[0]);
            // A start time is digits; a name from before it was part of the name has other text there.
            java.util.OptionalLong started = parts.length == 3 && parts[1].matches("\\d{1,18}")
                ? java.util.OptionalLong.of(Long.parseLong(parts[1])) : java.util.OptionalLong.empty();
            gone = !lives(pid, started);
          }
        } catch (NumberFormatException e) {
          continue; // not named by this rule: not ours to remove
        }
        if (gone) {
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
