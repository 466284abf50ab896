package dev.tally.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * The read connections of a {@link SqliteStore}: a small HikariCP pool of connections SQLite opens read-only
 * ({@code SQLITE_OPEN_READONLY}, so SQLite itself refuses every write). In WAL mode each read runs on a
 * snapshot while the one writer commits: a read never waits for a batch and a batch never waits for a
 * read, and with several connections readers (API pages, status, reports) do not wait for each other
 * either.
 *
 * <p>Thread-safety: safe from any thread (Hikari's pool).
 */
final class ReadPool implements AutoCloseable {
  /**
   * Read connections of a store a coordinator writes: reads serve people and the HTTP API, never the hot
   * path, and the machine has few cores; four lets a page, a results download and a status query run at
   * once without each holding a file handle and page cache of its own for nothing.
   */
  static final int SIZE = 4;

  /** Read connections of a store opened only to be read ({@code tally status}): one reader at a time. */
  static final int SIZE_READ_ONLY = 1;

  /**
   * How long a read waits for a free connection before it fails: far beyond any one page's read, short
   * enough that a stuck reader shows up as an error rather than a hang.
   */
  static final Duration WAIT = Duration.ofSeconds(10);

  private final HikariDataSource pool;

  private ReadPool(HikariDataSource pool) {
    this.pool = pool;
  }

  /**
   * Opens the pool's connections.
   *
   * @param url the store's JDBC URL
   * @param size how many connections
   * @param busyTimeout how long a statement waits for another process's lock
   * @throws SQLException if a connection cannot be opened
   */
  static ReadPool open(String url, int size, Duration busyTimeout) throws SQLException {
    SQLiteConfig config = new SQLiteConfig();
    config.setReadOnly(true);
    config.setBusyTimeout((int) busyTimeout.toMillis());
    SQLiteDataSource source = new SQLiteDataSource(config);
    source.setUrl(url);
    HikariConfig h = new HikariConfig();
    h.setDataSource(source);
    h.setPoolName("tally-store-readers");
    h.setMaximumPoolSize(size);
    h.setMinimumIdle(size);
    h.setConnectionTimeout(WAIT.toMillis());
    h.setReadOnly(true); // as the connections are opened (sqlite-jdbc refuses to change the flag later)
    h.setAutoCommit(true); // each read begins and ends its own snapshot (see SqliteStore#read)
    try {
      return new ReadPool(new HikariDataSource(h));
    } catch (RuntimeException e) {
      // Hikari reports a connection it could not open as an unchecked PoolInitializationException.
      throw new SQLException(e.getCause() != null ? e.getCause().getMessage() : e.getMessage(), e);
    }
  }

  /** A read connection; close it to give it back. */
  Connection borrow() throws SQLException {
    return pool.getConnection();
  }

  @Override
  public void close() {
    pool.close();
  }
}
