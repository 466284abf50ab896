package dev.tally.store;

import dev.tally.core.store.Durability;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * SQLite's side of {@link Dialect}: one file in WAL mode with {@code synchronous} as the store's {@link
 * Durability} (FULL, or NORMAL when relaxed), write transactions begun {@code IMMEDIATE}, index hints
 * ({@code INDEXED BY}) on the hot path's queries.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class SqliteDialect implements Dialect {

  /** The one instance: the dialect has no state. */
  static final SqliteDialect INSTANCE = new SqliteDialect();

  /**
   * How long a statement waits for another process's lock before failing with {@code SQLITE_BUSY}. Long
   * enough to ride out a reader's checkpoint-blocking transaction or a status query; short enough that a
   * genuinely stuck file shows up as an error rather than a hang.
   */
  static final Duration BUSY_TIMEOUT = Duration.ofSeconds(10);

  private SqliteDialect() {}

  @Override
  public String name() {
    return "SQLite";
  }

  @Override
  public String migrations() {
    return "classpath:db/migration/sqlite";
  }

  /**
   * Connection settings for Flyway and the readers: the busy timeout, and read-only or not
   * ({@code SQLITE_OPEN_READONLY}: SQLite itself then refuses every write).
   */
  static SQLiteConfig config(boolean readOnly) {
    SQLiteConfig config = new SQLiteConfig();
    config.setReadOnly(readOnly);
    config.setBusyTimeout((int) BUSY_TIMEOUT.toMillis());
    return config;
  }

  /**
   * {@inheritDoc}
   *
   * <p>WAL, with {@code synchronous} as {@link #synchronous} maps {@code durability}: {@code FULL} fsyncs
   * the WAL before each commit returns (an acked result survives a power loss); {@code NORMAL} leaves the
   * commit in the operating system's page cache and fsyncs at checkpoints (it survives a {@code kill -9}
   * of the process, not a power loss). The busy timeout covers other processes that open the file beside
   * the coordinator, such as {@code tally status}.
   */
  @Override
  public void configureWriter(Connection writer, Durability durability) throws SQLException {
    try (Statement s = writer.createStatement()) {
      s.execute("PRAGMA busy_timeout = " + BUSY_TIMEOUT.toMillis());
      s.execute("PRAGMA journal_mode = WAL");
      s.execute("PRAGMA synchronous = " + synchronous(durability));
      s.execute("PRAGMA foreign_keys = ON");
    }
  }

  /** SQLite's {@code synchronous} level for {@code durability}, in WAL mode. */
  static String synchronous(Durability durability) {
    return switch (durability) {
      case FULL -> "FULL";
      case RELAXED -> "NORMAL";
    };
  }

  /** {@inheritDoc} */
  @Override
  public String describe(Durability durability) {
    return "SQLite WAL synchronous=" + synchronous(durability) + " (" + fsyncs(durability) + ")";
  }

  /** {@inheritDoc} What SQLite's documentation of {@code PRAGMA synchronous} says it does in WAL mode. */
  @Override
  public String fsyncs(Durability durability) {
    return switch (durability) {
      case FULL -> "fsyncs the WAL at every commit, and the WAL and the database file at each checkpoint";
      case RELAXED -> "fsyncs only at checkpoints: the WAL, then the database file; none per commit";
    };
  }

  /**
   * {@inheritDoc}
   *
   * <p>IMMEDIATE takes the write lock at once: a deferred transaction that read first could fail with
   * {@code SQLITE_BUSY_SNAPSHOT} at its first write without calling the busy handler.
   */
  @Override
  public String begin() {
    return "BEGIN IMMEDIATE";
  }

  /**
   * {@inheritDoc}
   *
   * <p>A read: the transaction began {@code IMMEDIATE}, so it holds the file's one write lock, and a
   * takeover ({@link LeaderSql#swap}, itself a write transaction) can commit only before it, when the read
   * sees the new epoch, or after it. Writing the row, as PostgreSQL must, would only add a page to every
   * commit's WAL.
   */
  @Override
  public String fence() {
    return "SELECT epoch FROM coordinator_leader WHERE id = 1 AND epoch = ?";
  }

  /**
   * {@inheritDoc}
   *
   * <p>SQLite's planner picks the wrong index for some of the hot path's queries on a large table (a
   * full scan of a run's jobs instead of the partial index's few rows), so they name it.
   */
  @Override
  public String indexedBy(String index) {
    return " INDEXED BY " + index;
  }

  /** {@inheritDoc} The table has a rowid, which grows with every insert. */
  @Override
  public String responsesInInsertionOrder() {
    return "rowid";
  }

  /** {@inheritDoc} SQLite's {@code max} with two arguments is the scalar one. */
  @Override
  public String greatest(String a, String b) {
    return "MAX(" + a + ", " + b + ")";
  }

  @Override
  public String containsLiteral(String haystack, String needle) {
    return "instr(" + haystack + ", " + needle + ") > 0";
  }

  /**
   * {@inheritDoc}
   *
   * <p>A file has no connection to lose; {@code SQLITE_BUSY} (another process held the lock beyond the
   * busy timeout) is contention, every other error permanent.
   */
  @Override
  public Failure classify(SQLException e) {
    if (e instanceof SQLiteException s) {
      SQLiteErrorCode code = s.getResultCode();
      if (code != null && (code.code & 0xff) == SQLiteErrorCode.SQLITE_BUSY.code) {
        return Failure.CONTENDED;
      }
    }
    return Failure.PERMANENT;
  }
}
