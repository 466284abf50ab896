package dev.tally.store;

import dev.tally.core.store.Durability;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * What differs between the databases a {@link JdbcStore} runs on, and nothing else: the write
 * connection's settings, how a write transaction begins, where the migrations live, the few fragments
 * of SQL each spells its own way, and what a database error means. Every statement is written once, in
 * {@link StoreSql} and beside the reads of {@link JdbcStore}, in the SQL both databases accept; a
 * fragment comes from here only where they cannot agree.
 *
 * <p>Thread-safety: implementations are immutable and safe from any thread.
 */
interface Dialect {

  /** What a database error means for the transaction that met it, as {@link #classify} judges it. */
  enum Failure {
    /**
     * The connection is gone or the server is restarting (a network cut, a restart, a failover): the
     * transaction was not committed, and the same work may succeed on a new connection a little later.
     */
    CONNECTION_LOST,
    /**
     * Another writer held a lock too long, or the database aborted the transaction to keep it
     * serializable: nothing was committed, and the same work may succeed if run again.
     */
    CONTENDED,
    /** Anything else (a constraint, a full disk, a bug in a statement): running it again would not help. */
    PERMANENT
  }

  /** The database's name as people know it, for messages: {@code SQLite}, {@code PostgreSQL}. */
  String name();

  /** The Flyway location of this database's migrations, e.g. {@code classpath:db/migration/sqlite}. */
  String migrations();

  /**
   * Applies the write connection's session settings (durability, locking, foreign keys), once, right
   * after it is opened and before any transaction. The dialect is the one owner of what a {@link
   * Durability} means in its database's settings.
   *
   * @param writer the store's write connection, in auto-commit mode
   * @param durability what an acknowledged result must survive
   * @throws SQLException if a setting is refused
   */
  void configureWriter(Connection writer, Durability durability) throws SQLException;

  /**
   * What {@code durability} is in this database, in words for a report: the setting, and when the
   * database then forces its log to disk (for example {@code SQLite WAL synchronous=FULL (fsyncs the WAL
   * at every commit, ...)}).
   */
  String describe(Durability durability);

  /**
   * When the database forces its log to disk at {@code durability}, in words for a report (for example
   * {@code fsyncs the WAL at every commit, ...}); the part of {@link #describe} in parentheses.
   */
  String fsyncs(Durability durability);

  /**
   * The statement that begins a write transaction on the write connection (which stays in JDBC
   * auto-commit mode; {@code COMMIT} ends it).
   */
  String begin();

  /**
   * The fence a leader's write transaction begins with, right after {@link #begin()}: a query with the
   * epoch as its one parameter that returns a row if the leader row ({@code coordinator_leader}) still
   * names that epoch and none if another coordinator took the lead. It must also keep the row from
   * changing until the transaction ends, so that a takeover cannot commit between the fence and the
   * commit: the one owner of how each database holds it ({@link LeaderSql#fence} runs it).
   */
  String fence();

  /**
   * A hint naming the index a query must walk, placed right after the table's name in its
   * {@code FROM}, or the empty string where the database's planner takes no hint (it is then the planner's to
   * find the index; the statements are written so that it can).
   *
   * @param index the index's name, as the migrations create it
   */
  String indexedBy(String index);

  /**
   * The order in which the rows of {@code responses} were inserted, as an {@code ORDER BY} expression:
   * the journal is read back in the order the calls were paid for.
   */
  String responsesInInsertionOrder();

  /** The larger of two integer SQL expressions, as an SQL expression. */
  String greatest(String a, String b);

  /**
   * Whether the text expression {@code haystack} contains the text expression {@code needle} literally
   * (no wildcards), as an SQL condition.
   */
  String containsLiteral(String haystack, String needle);

  /**
   * The store's wall clock, by which leader leases are judged ({@link dev.tally.core.lead.LeaderRead}), so that
   * coordinators on several machines need not agree on the time. This default is the coordinator's own
   * clock, right for a database only one machine opens (SQLite); a database shared by machines answers with
   * its server's clock (PostgreSQL: {@code now()}-like, in epoch milliseconds).
   *
   * @param c a connection of the store, for a dialect that asks its server
   * @param local this process's wall clock
   * @return the time, epoch ms
   * @throws SQLException if the database fails
   */
  default long nowMillis(Connection c, java.time.Clock local) throws SQLException {
    return local.millis();
  }

  /**
   * What an error met while writing means: whether the same work may succeed if tried again, on this
   * connection or a new one.
   *
   * @param e the error a statement, a commit or a connection threw
   */
  Failure classify(SQLException e);
}
