package dev.tally.store;

import dev.tally.core.store.Durability;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;

/**
 * PostgreSQL's side of {@link Dialect}: {@code synchronous_commit} as the {@link Durability} says
 * ({@code on} for FULL: a commit is flushed to the WAL on disk before it returns), plain {@code BEGIN} (READ COMMITTED: the one writer is
 * the only one changing rows, and its {@code UPDATE ... WHERE} statements re-check their conditions on
 * the rows they change), no index hints (the planner finds the partial indexes), and errors classified
 * by SQLSTATE.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class PostgresDialect implements Dialect {

  /** The one instance: the dialect has no state. */
  static final PostgresDialect INSTANCE = new PostgresDialect();

  /**
   * SQLSTATEs that mean the server went away or is not taking connections yet, so the same work may
   * succeed on a new connection later: class 08 (connection exception) is matched by its prefix; these
   * are the others. 57P01 admin_shutdown (a fast or immediate stop), 57P02 crash_shutdown (another
   * backend crashed and the server is resetting), 57P03 cannot_connect_now (starting up or recovering),
   * 53300 too_many_connections (a restart's clients reconnecting at once), 25P03
   * idle_in_transaction_session_timeout (the server ended a session frozen inside a transaction: see
   * {@link #IDLE_IN_TRANSACTION_TIMEOUT}).
   */
  private static final Set<String> CONNECTION_STATES = Set.of("57P01", "57P02", "57P03", "53300", "25P03");

  /** SQLSTATEs of a transaction the server aborted to keep order: 40001 serialization, 40P01 deadlock. */
  private static final Set<String> CONTENDED_STATES = Set.of("40001", "40P01");

  /**
   * How long a write waits for a row lock another session holds (a person's session, another coordinator)
   * before it fails: far beyond any batch of Tally's own, short enough that a stuck lock shows up as an
   * error rather than a hang.
   */
  static final Duration LOCK_TIMEOUT = Duration.ofSeconds(10);

  /**
   * How long the writer's session may sit idle inside a transaction before the server ends it: a leader
   * frozen (SIGSTOP, a paused VM) between two statements of a batch would otherwise hold the leader row's
   * lock, and no standby could take over until it thawed. Below the leader lease's default (3 s), so the
   * lock is gone by the time the lease lapses; far above the gaps between a batch's statements. A thawed
   * leader finds its connection ended, tries the batch again on a new one, and is refused by the epoch.
   */
  static final Duration IDLE_IN_TRANSACTION_TIMEOUT = Duration.ofSeconds(2);

  private PostgresDialect() {}

  @Override
  public String name() {
    return "PostgreSQL";
  }

  @Override
  public String migrations() {
    return "classpath:db/migration/postgresql";
  }

  /**
   * {@inheritDoc}
   *
   * <p>{@code synchronous_commit} as {@link #synchronousCommit} maps {@code durability}, stated rather
   * than assumed from the server's configuration. A statement that waits on a lock longer than
   * {@link #LOCK_TIMEOUT} fails rather than hangs ({@code lock_timeout}).
   */
  @Override
  public void configureWriter(Connection writer, Durability durability) throws SQLException {
    try (Statement s = writer.createStatement()) {
      s.execute("SET synchronous_commit = " + synchronousCommit(durability));
      s.execute("SET lock_timeout = '" + LOCK_TIMEOUT.toMillis() + "ms'");
      s.execute("SET idle_in_transaction_session_timeout = '" + IDLE_IN_TRANSACTION_TIMEOUT.toMillis() + "ms'");
    }
  }

  /** PostgreSQL's {@code synchronous_commit} for {@code durability}: {@code on} (its default) or {@code off}. */
  static String synchronousCommit(Durability durability) {
    return switch (durability) {
      case FULL -> "on";
      case RELAXED -> "off";
    };
  }

  @Override
  public String describe(Durability durability) {
    return "PostgreSQL synchronous_commit=" + synchronousCommit(durability) + " (" + fsyncs(durability) + ")";
  }

  /** {@inheritDoc} What PostgreSQL's documentation of {@code synchronous_commit} says, on the server's disk. */
  @Override
  public String fsyncs(Durability durability) {
    return switch (durability) {
      case FULL -> "the server flushes its WAL to disk before each commit returns";
      case RELAXED -> "the server's WAL writer flushes commits a moment after they return (wal_writer_delay); none per commit";
    };
  }

  @Override
  public String begin() {
    return "BEGIN";
  }

  /**
   * {@inheritDoc}
   *
   * <p>An update of the row (to itself), which locks it until the commit: a takeover's {@link LeaderSql#swap}
   * updates the same row, so it waits for a batch in flight under the old epoch, and the batch cannot commit
   * after the takeover. A plain read would not: under READ COMMITTED a takeover could commit between the
   * read and the batch's commit.
   */
  @Override
  public String fence() {
    return "UPDATE coordinator_leader SET epoch = epoch WHERE id = 1 AND epoch = ? RETURNING epoch";
  }

  /** {@inheritDoc} PostgreSQL takes no hints; its planner uses the partial indexes on its own. */
  @Override
  public String indexedBy(String index) {
    return "";
  }

  /** {@inheritDoc} The identity column {@code seq} stands for SQLite's rowid (see the V1 migration). */
  @Override
  public String responsesInInsertionOrder() {
    return "seq";
  }

  @Override
  public String greatest(String a, String b) {
    return "GREATEST(" + a + ", " + b + ")";
  }

  @Override
  public String containsLiteral(String haystack, String needle) {
    return "strpos(" + haystack + ", " + needle + ") > 0";
  }

  /**
   * The server's clock, so that coordinators on machines whose clocks disagree judge the leader lease by
   * one clock: {@code clock_timestamp()} (the time now, not the transaction's start) in milliseconds.
   */
  @Override
  public long nowMillis(Connection c, java.time.Clock local) throws SQLException {
    try (Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>By SQLSTATE, walking the chain of causes (the driver wraps an I/O error in a {@link SQLException}
   * of class 08; Hikari reports a pool that found no live connection as a
   * {@link SQLTransientConnectionException}).
   */
  @Override
  public Failure classify(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLTransientConnectionException) {
        return Failure.CONNECTION_LOST;
      }
      if (t instanceof SQLException s && s.getSQLState() != null) {
        String state = s.getSQLState();
        if (state.startsWith("08") || CONNECTION_STATES.contains(state)) {
          return Failure.CONNECTION_LOST;
        }
        if (CONTENDED_STATES.contains(state)) {
          return Failure.CONTENDED;
        }
      }
    }
    return Failure.PERMANENT;
  }
}
