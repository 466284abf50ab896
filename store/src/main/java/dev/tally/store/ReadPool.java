package dev.tally.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * The read connections of a {@link JdbcStore}: a small HikariCP pool of read-only connections. Each read
 * runs on a snapshot while the one writer commits (SQLite's WAL, PostgreSQL's MVCC): a read never waits
 * for a batch and a batch never waits for a read, and with several connections readers (API pages,
 * status, reports) do not wait for each other either.
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
   * Read connections kept open when no one reads: one, opened with the pool (which so fails at once on a
   * store it cannot read). The others open when reads overlap and close after Hikari's idle timeout. With
   * all four kept open, Hikari opened three more in the background at every start (a run that never reads
   * paid for them), and closing the store waited for that (23 ms of a three-case run's wall clock).
   */
  static final int MIN_IDLE = 1;

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
   * @param config where the connections come from (a data source or a JDBC URL) and how they are opened;
   *     this method sets the pool's name, size and timeouts, and auto-commit on
   * @param size how many connections at most; {@link #MIN_IDLE} of them are opened now and kept
   * @throws SQLException if a connection cannot be opened
   */
  static ReadPool open(HikariConfig config, int size) throws SQLException {
    config.setPoolName("tally-store-readers");
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(Math.min(MIN_IDLE, size));
    config.setConnectionTimeout(WAIT.toMillis());
    config.setAutoCommit(true); // each read begins and ends its own snapshot (see JdbcStore#read)
    try {
      return new ReadPool(new HikariDataSource(config));
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
