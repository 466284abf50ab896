package dev.tally.store;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import dev.tally.core.store.StoreException;
import org.flywaydb.core.Flyway;

/**
 * The SQLite schema at this build's newest migration, made once by Flyway when the build runs (Maven's
 * {@code process-classes} phase calls {@link #main}) and shipped as two resources: {@value #DATABASE}, an
 * empty store file Flyway migrated from nothing, and {@value #HISTORY}, the rows of its Flyway history.
 *
 * <p>Why: Flyway is the one owner of the schema, but starting it in a fresh JVM costs about 0.35 s of CPU
 * for a new store and 0.15 s to validate an existing one (class loading and first runs of its configuration,
 * plugin registry and SQL parser; async-profiler on {@code tally run}), all of it before the first case can
 * be leased. A new store is therefore a copy of the template ({@link #create}), and a store whose history
 * is exactly the template's ({@link #isCurrent}) needs no migration and no validation; Flyway still does
 * everything else: an older store is migrated, a newer one refused, a failed or edited migration reported.
 *
 * <p>Such a store's Flyway history says it was installed when the build made the template, not when the copy
 * was made, and by the build's user; nothing reads those two columns.
 *
 * <p>The history lines compare what Flyway's validation compares for an applied versioned migration: the
 * version, the description, the type, the checksum, and success. A store whose history matches has, row for
 * row, the migrations this build's Flyway would apply to an empty file, so Flyway would find nothing to do.
 *
 * <p>Thread-safety: stateless; {@link #create} is safe against other threads and processes creating the same
 * file (the copy appears under its name whole, or not at all).
 */
public final class SqliteSchemaTemplate {

  /** The resource holding the template store file. */
  static final String DATABASE = "db/template/sqlite.db";

  /** The resource holding the template's Flyway history, one {@link #historyLine} per applied migration. */
  static final String HISTORY = "db/template/sqlite.history";

  /** The query for the history lines, in the order Flyway applied them. */
  private static final String HISTORY_QUERY = "SELECT version, description, type, checksum, success"
      + " FROM flyway_schema_history WHERE version IS NOT NULL ORDER BY installed_rank";

  /** This build's template history, or null if the build made none (then every open goes through Flyway). */
  private static final List<String> TEMPLATE_HISTORY = readTemplateHistory();

  private SqliteSchemaTemplate() {}

  /**
   * Build step: migrates a new file with Flyway over {@link SqliteDialect#migrations} and writes the two
   * resources under {@code args[0]} (the module's class output directory). Its store id is left blank: a copy
   * is given its own at {@link #create}, and one that was not would be seen at once.
   *
   * @param args the output directory
   * @throws Exception if Flyway or the file system fails; the build fails with it
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      throw new IllegalArgumentException("usage: SqliteSchemaTemplate OUTPUT_DIRECTORY");
    }
    // In the build Flyway logs through java.util.logging too, a few lines per migration. Held in a local so
    // that the logger, and so its level, live through the migration.
    java.util.logging.Logger flywayLog = java.util.logging.Logger.getLogger("org.flywaydb");
    flywayLog.setLevel(java.util.logging.Level.WARNING);
    Path database = Path.of(args[0]).resolve(DATABASE);
    Path history = Path.of(args[0]).resolve(HISTORY);
    Files.createDirectories(database.getParent());
    Path work = Files.createTempFile(database.getParent(), "template", ".db");
    try {
      Files.delete(work);
      String url = "jdbc:sqlite:" + work.toAbsolutePath();
      Flyway.configure().dataSource(url, null, null).locations(SqliteDialect.INSTANCE.migrations()).load().migrate();
      List<String> lines;
      try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
        s.executeUpdate("UPDATE store_info SET store_id = ''");
        s.execute("VACUUM");
        lines = history(c);
      }
      Files.write(history, lines, StandardCharsets.UTF_8);
      Files.move(work, database, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(work);
      java.lang.ref.Reference.reachabilityFence(flywayLog);
    }
  }

  /**
   * Creates {@code file} as a copy of the template with a store id of its own, if it does not exist. The copy
   * is made beside it under another name and linked to its name only when whole, so another process opening
   * or creating the same file at the same moment sees either no file or a whole one.
   *
   * <p>The copy's name is {@value #COPY_PREFIX}, this process's pid and a random number: short whatever the
   * store's name (a store name as long as the file system allows still gets its copy), and recognisable. A
   * copy is removed when this call ends, at the JVM's shutdown if it is interrupted (Ctrl-C, SIGTERM), and,
   * if its process was killed outright, by the next call in the same directory ({@link #removeLeftovers}).
   *
   * @param file the store file, absolute; its directory exists
   * @return true if this call created it; false if it existed already, or this build has no template, or the
   *     file system cannot link (the caller then creates it with Flyway, as without a template)
   * @throws SQLException if the copy cannot be given its store id
   * @throws StoreException if the copy cannot be written (no permission, a full disk), naming the directory
   *     and why
   */
  static boolean create(Path file) throws SQLException {
    if (TEMPLATE_HISTORY == null || Files.exists(file)) {
      return false;
    }
    Path directory = file.getParent();
    removeLeftovers(directory);
    // Load SQLite's native library (the first connection would) before the copy exists: it takes tens of
    // milliseconds, and the copy's life should be as short as it can be.
    try {
      org.sqlite.SQLiteJDBCLoader.initialize();
    } catch (Exception e) {
      throw new SQLException("cannot load SQLite's native library: " + e.getMessage(), e);
    }
    // Not Files.createTempFile: its owner-only permissions would become the store's, unlike those of a store
    // Flyway creates (the user's umask).
    Path copy = directory.resolve(ProcessFiles.ownPrefix(COPY_PREFIX)
        + Integer.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextInt()));
    copy.toFile().deleteOnExit();
    try {
      try (InputStream template = SqliteSchemaTemplate.class.getClassLoader().getResourceAsStream(DATABASE)) {
        if (template == null) {
          return false;
        }
        Files.copy(template, copy);
      } catch (IOException e) {
        throw new StoreException("open: cannot create " + file + ": cannot write in " + directory + ": " + why(e), e);
      }
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + copy.toAbsolutePath());
          Statement s = c.createStatement()) {
        // The same identity V7__store_identity.sql gives a store Flyway creates: 16 random bytes in hex.
        s.executeUpdate("UPDATE store_info SET store_id = lower(hex(randomblob(16)))");
      }
      try {
        Files.createLink(file, copy); // fails if the name exists: never replaces a store another process made
        return true;
      } catch (FileAlreadyExistsException e) {
        return false;
      } catch (IOException | UnsupportedOperationException e) {
        // No hard links on this file system, or the link failed for another reason: Flyway creates the store,
        // as without a template, and reports whatever is wrong with the directory.
        return false;
      }
    } finally {
      deleteQuietly(copy);
      deleteQuietly(copy.resolveSibling(copy.getFileName() + "-journal"));
    }
  }

  /** The start of a copy's name: {@code COPY_PREFIX + pid + "-" + random hex}, and a journal of it. */
  static final String COPY_PREFIX = ".tally-new-store-";

  /**
   * Removes the copies (and their journals) that processes killed in the middle of {@link #create} left in
   * {@code directory} ({@link ProcessFiles#removeLeftovers}: those whose pid is no process's).
   */
  static void removeLeftovers(Path directory) {
    ProcessFiles.removeLeftovers(directory, COPY_PREFIX);
  }

  /** What went wrong with a file, in words: {@code AccessDeniedException}'s message is only the path. */
  static String why(IOException e) {
    if (e instanceof java.nio.file.AccessDeniedException) {
      return "permission denied";
    }
    if (e instanceof java.nio.file.FileSystemException f && f.getReason() != null) {
      return f.getReason();
    }
    return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
  }

  private static void deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      // left for removeLeftovers, or for the JVM's shutdown
    }
  }

  /**
   * Whether the store {@code c} is connected to has exactly this build's template history: every migration
   * applied, succeeded, and unchanged, and none from a newer build. False for a file with no history table.
   *
   * @param c a connection to the store file (read-only is enough)
   * @return true if Flyway would find nothing to migrate and nothing to refuse
   */
  static boolean isCurrent(Connection c) {
    if (TEMPLATE_HISTORY == null) {
      return false;
    }
    try {
      return history(c).equals(TEMPLATE_HISTORY);
    } catch (SQLException e) {
      return false; // no history table (a new or foreign file): Flyway says what it is
    }
  }

  /** The history lines of the store {@code c} is connected to. */
  private static List<String> history(Connection c) throws SQLException {
    List<String> lines = new ArrayList<>();
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(HISTORY_QUERY)) {
      while (rs.next()) {
        lines.add(historyLine(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getBoolean(5)));
      }
    }
    return lines;
  }

  /** One applied migration as the template's history records it; tab-separated, as no field holds a tab. */
  static String historyLine(String version, String description, String type, String checksum, boolean success) {
    return String.join("\t", version, description, type, String.valueOf(checksum), success ? "ok" : "failed");
  }

  private static List<String> readTemplateHistory() {
    try (InputStream in = SqliteSchemaTemplate.class.getClassLoader().getResourceAsStream(HISTORY)) {
      if (in == null) {
        return null;
      }
      List<String> lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
      return lines.isEmpty() ? null : lines;
    } catch (IOException e) {
      return null;
    }
  }
}
