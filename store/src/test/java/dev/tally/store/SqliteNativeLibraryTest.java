package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.util.LibraryLoaderUtil;

/**
 * The native library the launcher writes out once per build: the jar's bytes, replaced whole, and loaded by
 * a JVM given {@link SqliteNativeLibrary#options} without sqlite-jdbc writing a copy of its own.
 */
class SqliteNativeLibraryTest {
  @TempDir Path dir;

  @Test
  void writesTheJarsLibraryAndReplacesItWhole() throws Exception {
    Path library = SqliteNativeLibrary.writeTo(dir.resolve("native"));
    byte[] expected;
    try (InputStream in = LibraryLoaderUtil.class.getResourceAsStream(
        LibraryLoaderUtil.getNativeLibResourcePath() + "/" + LibraryLoaderUtil.getNativeLibName())) {
      expected = in.readAllBytes();
    }
    assertThat(library).hasFileName(LibraryLoaderUtil.getNativeLibName()).hasBinaryContent(expected);

    Files.write(library, new byte[] {1, 2, 3}); // a damaged file from before is replaced, not kept
    assertThat(SqliteNativeLibrary.writeTo(dir.resolve("native"))).isEqualTo(library).hasBinaryContent(expected);
    try (Stream<Path> files = Files.list(dir.resolve("native"))) {
      // No partial file left beside it; its length beside it, for the launcher to check.
      assertThat(files).containsExactlyInAnyOrder(library, dir.resolve("native").resolve(library.getFileName() + SqliteNativeLibrary.SIZE_SUFFIX));
    }
    assertThat(dir.resolve("native").resolve(library.getFileName() + SqliteNativeLibrary.SIZE_SUFFIX)).hasContent(expected.length + "\n");
    assertThat(SqliteNativeLibrary.options(library)).containsExactly(
        "-Dorg.sqlite.lib.path=" + library.getParent(), "-Dorg.sqlite.lib.name=" + library.getFileName());
  }

  @Test
  void aJvmGivenTheOptionsLoadsItWithoutWritingACopy() throws Exception {
    Path library = SqliteNativeLibrary.writeTo(dir.resolve("native"));
    Path withOptions = Files.createDirectory(dir.resolve("tmp-with"));
    Path without = Files.createDirectory(dir.resolve("tmp-without"));

    assertThat(probe(withOptions, SqliteNativeLibrary.options(library))).isEqualTo("copies=0");
    // The control: the same probe without them writes its copy into its temporary directory.
    assertThat(probe(without, List.of())).isEqualTo("copies=1");
  }

  @Test
  void aJvmPassesOnTheLibraryItWasToldOfAndNothingOtherwise() {
    String path = System.getProperty(SqliteNativeLibrary.PATH_PROPERTY);
    String name = System.getProperty(SqliteNativeLibrary.NAME_PROPERTY);
    try {
      System.clearProperty(SqliteNativeLibrary.PATH_PROPERTY);
      System.clearProperty(SqliteNativeLibrary.NAME_PROPERTY);
      assertThat(SqliteNativeLibrary.inheritedOptions()).isEmpty();
      System.setProperty(SqliteNativeLibrary.PATH_PROPERTY, dir.toString());
      System.setProperty(SqliteNativeLibrary.NAME_PROPERTY, "libsqlitejdbc.so");
      assertThat(SqliteNativeLibrary.inheritedOptions())
          .containsExactlyElementsOf(SqliteNativeLibrary.options(dir.resolve("libsqlitejdbc.so")));
    } finally { // SQLite is loaded already in this JVM: the properties are only read at its first load
      restore(SqliteNativeLibrary.PATH_PROPERTY, path);
      restore(SqliteNativeLibrary.NAME_PROPERTY, name);
    }
  }

  private static void restore(String property, String value) {
    if (value == null) {
      System.clearProperty(property);
    } else {
      System.setProperty(property, value);
    }
  }

  /** Runs {@link Probe} in a JVM whose sqlite-jdbc writes its copies to {@code tmp}; returns its line. */
  private static String probe(Path tmp, List<String> options) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Dorg.sqlite.tmpdir=" + tmp));
    command.addAll(options);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Probe.class.getName(), tmp.toString()));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(out).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    return out;
  }

  /** Opens an in-memory database and prints how many library copies its temporary directory then holds. */
  static final class Probe {
    public static void main(String[] args) throws Exception {
      try (Connection c = DriverManager.getConnection("jdbc:sqlite::memory:");
          ResultSet rs = c.createStatement().executeQuery("select sqlite_version()")) {
        rs.next();
        try (Stream<Path> files = Files.list(Path.of(args[0]))) {
          System.out.println("copies=" + files.filter(f -> !f.getFileName().toString().endsWith(".lck")).count());
        }
      }
    }
  }
}
