package dev.tally.store;

import com.zaxxer.hikari.HikariConfig;
import dev.tally.core.store.Durability;
import dev.tally.core.store.StoreException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationInfoService;
import org.sqlite.SQLiteDataSource;

/**
 * The embedded {@link dev.tally.core.store.Store}: one SQLite file in WAL mode, written by one connection,
 * read by a small pool of read-only ones. This class opens the file, migrates its schema (Flyway,
 * {@code db/migration/sqlite}; a new file is a copy of the schema Flyway made at build time, and a file
 * already at it is not handed to Flyway at all: {@link SqliteSchemaTemplate}) and its connections; the
 * store's work is {@link JdbcStore}'s, the settings particular to SQLite {@link SqliteDialect}'s.
 *
 * <p><b>Durability.</b> The file runs with {@code journal_mode=WAL}, and {@code synchronous} as the
 * {@link Durability} it is opened with ({@link SqliteDialect#configureWriter} maps it): {@link
 * Durability#FULL} ({@code synchronous=FULL}) fsyncs the WAL at every commit, before {@link #apply}
 * returns, so an acked result survives a power loss; {@link Durability#RELAXED} ({@code
 * synchronous=NORMAL}) writes the commit to the WAL file (the operating system's page cache) and fsyncs
 * only at checkpoints, so an acked result survives a {@code kill -9} of the process (invariant I5) but the
 * last commits before a power loss or kernel crash may be lost. With group commit either costs one commit
 * per batch, not one per eval.
 *
 * <p><b>Writes</b> go through one connection under one lock, in {@code BEGIN IMMEDIATE} transactions, so
 * this process never meets {@code SQLITE_BUSY} from itself (SQLite admits one writer and does not queue
 * waiters fairly; see DESIGN.md section 5). {@code busy_timeout} covers other processes, such as
 * {@code tally status}, that open the file beside the coordinator.
 *
 * <p><b>Reads</b> use a small pool of connections SQLite opens read-only ({@code SQLITE_OPEN_READONLY}, so
 * SQLite itself refuses every write). WAL gives each read a consistent snapshot while the writer commits,
 * so a read never waits for a batch and a batch never waits for a read.
 *
 * <p>Thread-safety: safe for use from many threads.
 */
public final class SqliteStore extends JdbcStore {

  private final Path file;

  private SqliteStore(Path file, Clock clock, Connection writer, ReadPool readers, boolean readOnly) throws SQLException {
    super(SqliteDialect.INSTANCE, file.toString(), clock, writer, readers, readOnly);
    this.file = file;
  }

  /**
   * Opens (creating it if missing) the store file and brings its schema up to date, using the system
   * clock for run creation times.
   *
   * @param file the SQLite file; its parent directories are created if missing
   * @return an open store; close it when done
   * @throws StoreException if the file cannot be created or opened, or a migration fails
   */
  public static SqliteStore open(Path file) {
    return open(file, Clock.systemUTC());
  }

  /**
   * Opens (creating it if missing) the store file and brings its schema up to date with the Flyway
   * migrations in {@code db/migration/sqlite}, with {@link Durability#FULL}: the strict level, for callers
   * that do not choose (a coordinator's level is {@code CoordinatorBuilder}'s).
   *
   * @param file the SQLite file; its parent directories are created if missing
   * @param clock the wall clock for run creation times
   * @return an open store; close it when done
   * @throws StoreException if the file cannot be created or opened, or a migration fails
   */
  public static SqliteStore open(Path file, Clock clock) {
    return open(file, clock, Durability.FULL);
  }

  /**
   * Opens the store file as {@link #open(Path, Clock)} does, with {@code durability} instead of {@link
   * Durability#FULL}.
   *
   * @param file the SQLite file; its parent directories are created if missing
   * @param clock the wall clock for run creation times
   * @param durability what an acknowledged result survives (the write connection's {@code synchronous})
   * @return an open store; close it when done
   * @throws StoreException if the file cannot be created or opened, or a migration fails
   */
  public static SqliteStore open(Path file, Clock clock, Durability durability) {
    java.util.Objects.requireNonNull(durability, "durability");
    Path absolute = file.toAbsolutePath();
    String url = "jdbc:sqlite:" + absolute;
    try {
      Path parent = absolute.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
    } catch (IOException e) {
      throw new StoreException("open: cannot create the directory of " + absolute, e);
    }
    if (!createdOrCurrent(absolute, url)) {
      MigrationInfo current;
      try {
        Flyway flyway = flyway(url, false);
        flyway.migrate();
        current = flyway.info().current();
      } catch (RuntimeException e) {
        throw new StoreException("open: migrating the schema of " + absolute + " failed: " + rootMessage(e), e);
      }
      refuseNewerSchema(absolute.toString(), current);
    }
    Connection writer = null;
    ReadPool readers = null;
    try {
      writer = connectWriter(url, durability);
      readers = readPool(url, ReadPool.SIZE);
      return new SqliteStore(absolute, clock, writer, readers, false);
    } catch (SQLException e) {
      closeQuietly(writer);
      if (readers != null) {
        readers.close();
      }
      throw new StoreException("open: cannot open " + absolute + ": " + rootMessage(e), e);
    }
  }

  /**
   * Opens a store file that already exists and whose schema is already up to date, for reading only:
   * for readers ({@code tally status}, a monitor, a test) that may look at the file while a coordinator
   * is creating, migrating or using it. Nothing is created, migrated or changed, not even the store's
   * side files: reading a store nobody has open needs no write access at all. Every write method of the
   * returned store throws {@link StoreException}.
   *
   * @param file the SQLite file of an existing store
   * @return an open, read-only store; close it when done
   * @throws StoreException if there is no such file; if its schema is missing or not at this version of
   *     Tally (being created right now, made by an older Tally and not yet migrated: {@link #open} migrates
   *     it, or made by a newer one); or if it cannot be opened
   */
  public static SqliteStore openExisting(Path file) {
    Path absolute = file.toAbsolutePath();
    if (!Files.isRegularFile(absolute)) {
      throw new StoreException("open: no store file at " + absolute);
    }
    // Read-only either way, so reading changes nothing: no checkpoint, no journal-mode switch. With no
    // -wal or -journal file beside it nobody has the store open, and it is read as immutable: no locks,
    // and no -wal or -shm is created (which would need a writable directory, and would belong to this
    // user, locking the store's owner out). Otherwise a coordinator has it open, is migrating it (Flyway
    // writes through a rollback journal), or was killed with it open: read it under SQLite's locks.
    String name = absolute.getFileName().toString();
    boolean inUse = Files.exists(absolute.resolveSibling(name + "-wal"))
        || Files.exists(absolute.resolveSibling(name + "-journal"));
    String url = "jdbc:sqlite:" + absolute.toUri() + (inUse ? "?mode=ro" : "?immutable=1");
    Connection first = null;
    ReadPool readers = null;
    try {
      first = SqliteDialect.config(true).createConnection(url);
      if (!SqliteSchemaTemplate.isCurrent(first)) {
        MigrationInfoService info;
        try {
          info = flyway(url, true).info();
        } catch (RuntimeException e) {
          throw new StoreException("open: cannot read the schema version of " + absolute + ": " + rootMessage(e), e);
        }
        requireCurrentSchema(absolute.toString(), info);
      }
      readers = readPool(url, ReadPool.SIZE_READ_ONLY);
      return new SqliteStore(absolute, Clock.systemUTC(), first, readers, true);
    } catch (SQLException | RuntimeException e) {
      closeQuietly(first);
      if (readers != null) {
        readers.close();
      }
      if (e instanceof StoreException refused) {
        throw refused;
      }
      throw new StoreException("open: cannot open " + absolute + " for reading: " + rootMessage(e), e);
    }
  }

  /**
   * Whether the store file needs no migration: this call created it from the {@link SqliteSchemaTemplate}, or
   * it already has exactly the template's history. Otherwise (an older or newer store, a failed migration, a
   * build without a template, a file system without hard links) Flyway migrates, refuses or reports it.
   */
  private static boolean createdOrCurrent(Path file, String url) {
    try {
      if (SqliteSchemaTemplate.create(file)) {
        return true;
      }
      if (!Files.exists(file)) {
        return false;
      }
      try (Connection c = SqliteDialect.config(false).createConnection(url)) {
        return SqliteSchemaTemplate.isCurrent(c);
      }
    } catch (SQLException e) {
      throw new StoreException("open: cannot create or read the schema of " + file + ": " + rootMessage(e), e);
    }
  }

  /**
   * Flyway over this file's migrations. Its connections wait out another process's lock (busy timeout)
   * instead of failing at once, e.g. while a reader's snapshot is being set up.
   */
  private static Flyway flyway(String url, boolean readOnly) {
    SQLiteDataSource dataSource = new SQLiteDataSource(SqliteDialect.config(readOnly));
    dataSource.setUrl(url);
    return Flyway.configure()
        .dataSource(dataSource)
        .locations(SqliteDialect.INSTANCE.migrations())
        .load();
  }

  private static ReadPool readPool(String url, int size) throws SQLException {
    SQLiteDataSource source = new SQLiteDataSource(SqliteDialect.config(true));
    source.setUrl(url);
    HikariConfig h = new HikariConfig();
    h.setDataSource(source);
    h.setReadOnly(true); // as the connections are opened (sqlite-jdbc refuses to change the flag later)
    return ReadPool.open(h, size);
  }

  private static Connection connectWriter(String url, Durability durability) throws SQLException {
    // The connection stays in JDBC auto-commit mode and transactions are begun explicitly: the driver's
    // own non-auto-commit mode opens the next transaction right after each commit, which would hold
    // SQLite's write lock between batches and lock every other process out of writing.
    Connection c = DriverManager.getConnection(url);
    try {
      SqliteDialect.INSTANCE.configureWriter(c, durability);
    } catch (SQLException e) {
      closeQuietly(c);
      throw e;
    }
    return c;
  }

  /**
   * What this store does at {@code durability}, in words, for a benchmark's report: the setting, and the
   * fsyncs SQLite makes in WAL mode at that setting.
   */
  public static String describe(Durability durability) {
    return SqliteDialect.INSTANCE.describe(durability);
  }

  /** When this store fsyncs at {@code durability}, in words: the part of {@link #describe} in parentheses. */
  public static String fsyncs(Durability durability) {
    return SqliteDialect.INSTANCE.fsyncs(durability);
  }

  /** The store file, absolute. */
  public Path file() {
    return file;
  }

  /** Reads a PRAGMA of the write or the read connection, for tests of the connection settings. */
  String pragma(boolean writeConnection, String name) {
    SqlWork<String> query = c -> {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("PRAGMA " + name)) {
        return rs.next() ? rs.getString(1) : null;
      }
    };
    return writeConnection ? onWriter("pragma", query) : read("pragma", query);
  }

  @Override
  public String toString() {
    return "SqliteStore[" + file + "]";
  }
}
