package dev.tally.store;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.sqlite.util.LibraryLoaderUtil;

/**
 * SQLite's native library written out once, beside the jar, for the JVMs that open a store.
 *
 * <p>sqlite-jdbc keeps its native library inside its jar. Unless told where one already lies, every JVM that
 * opens a SQLite file writes the library out to {@code java.io.tmpdir} under a new name, reads it back to
 * compare it byte for byte with the jar's, and loads it: 60 ms of CPU and of wall time before a coordinator
 * can open its store (async-profiler, a three-case {@code tally run}), and a megabyte left in {@code /tmp} by
 * every JVM that is killed. The {@code tally} launcher runs {@link #main} once per build, writing the library
 * into a directory of the build ({@code cli/target/native}), and then starts every JVM with sqlite-jdbc's own
 * two properties naming it ({@link #options}), which sqlite-jdbc tries first; a JVM that starts another that
 * opens a store passes them on ({@link #inheritedOptions}). If that file is missing (a cleaned directory),
 * sqlite-jdbc goes back to writing its own copy, as without them.
 *
 * <p>Thread-safety: stateless.
 */
public final class SqliteNativeLibrary {

  private SqliteNativeLibrary() {}

  /** sqlite-jdbc's property naming the directory of its native library. */
  static final String PATH_PROPERTY = "org.sqlite.lib.path";
  /** sqlite-jdbc's property naming the file in that directory. */
  static final String NAME_PROPERTY = "org.sqlite.lib.name";
  /** What {@link #writeTo} appends to the library's name for the file that holds its length. */
  public static final String SIZE_SUFFIX = ".size";

  /**
   * Writes the native library for this machine's operating system and architecture (sqlite-jdbc's choice,
   * {@link LibraryLoaderUtil}) into {@code directory}, creating it, and replacing by rename any file of the
   * same name (a JVM that has the old one loaded keeps it). Beside it, in {@code NAME.size} ({@link
   * #SIZE_SUFFIX}), goes its length in bytes as decimal text: the {@code tally} launcher names the library
   * only while the two agree, so that a library cut short or replaced later (which crashed every JVM with
   * SIGBUS) is never loaded.
   *
   * @param directory where to write it
   * @return the library file written
   * @throws IOException if sqlite-jdbc's jar has no library for this machine, or the file cannot be written
   */
  public static Path writeTo(Path directory) throws IOException {
    String name = LibraryLoaderUtil.getNativeLibName();
    String resource = LibraryLoaderUtil.getNativeLibResourcePath() + "/" + name;
    Files.createDirectories(directory);
    Path target = directory.resolve(name);
    Path partial = Files.createTempFile(directory, name, ".partial");
    try (InputStream in = LibraryLoaderUtil.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException("sqlite-jdbc has no native library for this machine (" + resource + ")");
      }
      long size = Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
      Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      Files.writeString(directory.resolve(name + SIZE_SUFFIX), size + "\n"); // a line: the shell reads it with read
      return target;
    } finally {
      Files.deleteIfExists(partial);
    }
  }

  /**
   * The JVM options that make sqlite-jdbc load {@code library} (a file {@link #writeTo} wrote) instead of
   * writing a copy of its own.
   *
   * @param library the library file, absolute
   */
  public static List<String> options(Path library) {
    return List.of("-D" + PATH_PROPERTY + "=" + library.getParent(), "-D" + NAME_PROPERTY + "=" + library.getFileName());
  }

  /**
   * The options that make another JVM load the library this one was told of ({@link #options}), or none if
   * this JVM was told of none: for a JVM that starts others that open stores ({@code tally chaos}'s
   * coordinators).
   *
   * @return the two {@code -D} options of {@link #options}, or an empty list
   */
  public static List<String> inheritedOptions() {
    String path = System.getProperty(PATH_PROPERTY);
    String name = System.getProperty(NAME_PROPERTY);
    if (path == null || name == null) {
      return List.of();
    }
    return options(Path.of(path, name).toAbsolutePath());
  }

  /**
   * Writes the library into the directory {@code args[0]} ({@link #writeTo}); for the {@code tally}
   * launcher, which names it to every JVM it starts. Prints nothing: what the launcher passes is made from
   * the file's name, never read from a JVM's output (which {@code JDK_JAVA_OPTIONS} can add lines to).
   *
   * @param args one argument: the directory
   * @throws IOException as {@link #writeTo} does
   */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      throw new IllegalArgumentException("usage: SqliteNativeLibrary DIRECTORY");
    }
    writeTo(Path.of(args[0]).toAbsolutePath());
  }
}
